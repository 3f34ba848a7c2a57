package admission

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// The kinds a refusal names.
var (
	rulePackKind       = rulesv1alpha1.GroupVersion.WithKind("RulePack").GroupKind()
	capabilityKind     = rulesv1alpha1.GroupVersion.WithKind("Capability").GroupKind()
	operatorConfigKind = rulesv1alpha1.GroupVersion.WithKind("OperatorConfig").GroupKind()
)

// Bounds on what one response carries.
const (
	// maxCauses bounds the field errors of a refusal; one more entry counts the rest.
	maxCauses = 20
	// maxWarnings bounds the warnings of a response (the API server truncates them past
	// 4 KiB in all); one more line counts the rest.
	maxWarnings = 10
)

// fieldError renders a diagnostic as the field error at path: "[clause] message (rule
// r)", the offending value as the engine quoted it, or none when the engine gave none —
// so an unquoted `oar: 1.0` is never echoed back as if it were a version.
func fieldError(path string, e *diag.Error) *field.Error {
	var value any = field.OmitValueType{}
	if e.Value != "" {
		value = e.Value
	}
	return &field.Error{Type: field.ErrorTypeInvalid, Field: path, BadValue: value, Detail: detail(e)}
}

// detail is the diagnostic without its field, which the path of the field error carries.
func detail(e *diag.Error) string {
	cp := *e
	cp.Field = ""
	return cp.Format("")
}

// rulePath is the path of rule i of a pack, joined with field.
func rulePath(i int, field string) string { return bundle.RulePath(i, field) }

// ruleErrors renders diagnostics about the rules of a pack.
func ruleErrors(errs diag.List, rules []any) field.ErrorList {
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		cp := *e
		cp.Rule = ruleName(e, rules)
		out = append(out, fieldError(rulePath(e.Index, e.Field), &cp))
	}
	return out
}

// ruleName is the rule a diagnostic concerns: the loader's, or the one the document's id
// and namespace spell when the loader stopped before it read them.
func ruleName(e *diag.Error, rules []any) string {
	if e.Rule == "" && e.Index >= 0 && e.Index < len(rules) {
		q, _ := engine.QualifiedID(rules[e.Index])
		return q
	}
	return e.Rule
}

// invalid is the refusal of the named object: one cause per field error, at most
// maxCauses and then one counting the rest. It keeps every field error for Judge, since
// that last cause promises that `oarctl validate` lists every one.
func invalid(kind schema.GroupKind, name string, errs field.ErrorList) error {
	all, listed := errs, errs
	if n := len(errs) - maxCauses; n > 0 {
		listed = append(errs[:maxCauses:maxCauses], &field.Error{
			Type: field.ErrorTypeTooMany, Field: "spec", BadValue: field.OmitValueType{},
			Detail: fmt.Sprintf("%s not listed here; `oarctl validate` lists every one", count(n, "more problem")),
		})
	}
	return &refusal{StatusError: apierrors.NewInvalid(kind, name, listed), all: all}
}

// refusal is the Invalid status the webhook answers — what controller-runtime and
// apierrors read of it is the embedded StatusError — and every field error it was built
// from.
type refusal struct {
	*apierrors.StatusError
	all field.ErrorList
}

// Unwrap lets errors.As find the StatusError.
func (r *refusal) Unwrap() error { return r.StatusError }

// count is "1 noun" or "n nouns".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
