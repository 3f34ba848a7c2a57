package admission

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// TestRuleErrors: a diagnostic becomes a field error at the path into the resource, with
// the clause and the rule in its detail — the rule spelled from the document when the
// loader stopped before reading it — and no value when the engine quoted none.
func TestRuleErrors(t *testing.T) {
	rules := []any{decodedDoc(t, rule("acme.security", "READ"))}
	withValue := &diag.Error{Clause: "OAR-FACT-3", Rule: "acme.security/READ", Index: 0, Field: "when", Value: "pth == 1", Offset: 0, Message: `unknown identifier "pth" at offset 0`}
	noValue := &diag.Error{Clause: "OAR-DOC-3", Index: 0, Field: "oar", Offset: -1, Message: "oar must be a string"}
	got := ruleErrors(diag.List{withValue, noValue}, rules)
	want := []string{
		`spec.rules[0].when: Invalid value: "pth == 1": [OAR-FACT-3] unknown identifier "pth" at offset 0 (rule acme.security/READ)`,
		`spec.rules[0].oar: Invalid value: [OAR-DOC-3] oar must be a string (rule acme.security/READ)`,
	}
	for i, w := range want {
		if got[i].Error() != w {
			t.Errorf("got  %s\nwant %s", got[i].Error(), w)
		}
	}
}

// TestInvalidIsCapped: a refusal lists maxCauses causes and one counting the rest.
func TestInvalidIsCapped(t *testing.T) {
	var errs field.ErrorList
	for i := range maxCauses + 3 {
		errs = append(errs, fieldError(fmt.Sprintf("spec.rules[%d].when", i), &diag.Error{Clause: "OAR-FACT-3", Message: "m"}))
	}
	var status apierrors.APIStatus
	if err := invalid(rulePackKind, "p", errs); !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("not an Invalid status: %v", err)
	}
	causes := status.Status().Details.Causes
	if last := causes[len(causes)-1]; len(causes) != maxCauses+1 || last.Field != "spec" ||
		last.Message != "Too many: 3 more problems not listed here; `oarctl validate` lists every one" {
		t.Fatalf("got %d causes, the last %+v", len(causes), last)
	}
	if err := invalid(rulePackKind, "p", errs[:1]); !strings.Contains(err.Error(), "[OAR-FACT-3]") {
		t.Errorf("a short list lost its cause: %v", err)
	}
}

// TestWarningsAreCapped: a response carries maxWarnings warnings and one counting the
// rest, which is of an unserved kind when one of the rest is, so that `oarctl validate
// --strict` counts what the line stands for.
func TestWarningsAreCapped(t *testing.T) {
	var w warnings
	for i := range maxWarnings + 1 {
		w.add(LoadAdvice, "OAR-SEL-6", fmt.Sprintf("spec.rules[%d].selector.tool", i), "rule %d", i)
	}
	got := w.response()
	if len(got) != maxWarnings+1 || got[0] != "[OAR-SEL-6] spec.rules[0].selector.tool: rule 0" || got[maxWarnings] != "and 1 more warning not listed here" {
		t.Fatalf("got %q", got)
	}
	if rest := w.list()[maxWarnings]; rest.Kind.Unserved() {
		t.Errorf("the rest are advice, the line counting them is %s", rest.Kind)
	}
	w.add(DuplicateRule, "OAR-DOC-9", "spec.rules[11].id", "rule 11")
	if rest := w.list()[maxWarnings]; rest.Text != "and 2 more warnings not listed here" || rest.Kind != DuplicateRule {
		t.Errorf("the rest hold a duplicate rule, the line counting them is %+v", rest)
	}
	if len(w) != maxWarnings+2 {
		t.Errorf("list modified the warnings: %d of them", len(w))
	}
}
