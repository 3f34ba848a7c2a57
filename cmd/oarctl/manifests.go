package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// manifest is a RulePack, Capability or OperatorConfig that validate gives the admission
// webhook's verdict, and where it came from.
type manifest struct {
	object client.Object
	at     origin
}

// manifestKinds are the kinds the webhook judges, each with the document it wraps.
var manifestKinds = map[string]docKind{"Capability": capabilityDoc, "RulePack": ruleDoc, "OperatorConfig": configDoc}

// servedAPIVersion is the apiVersion of the operator's resources.
var servedAPIVersion = rulesv1alpha1.GroupVersion.String()

// memberSort is what validate does with one member of a file.
type memberSort int

const (
	// plainMember is classified as a plain OAR document (classify refuses what is not
	// one, a rules.oar.dev object of a kind the webhook does not judge included).
	plainMember memberSort = iota
	// judgedManifest is a RulePack, Capability or OperatorConfig: the webhook judges it.
	judgedManifest
	// manifestList is a list (a v1 List, what `kubectl get -o yaml` prints): kubectl
	// applies each of its items, so each is read as a member.
	manifestList
	// otherManifest is a Kubernetes object of another API group: skipped and counted.
	otherManifest
	// lookalikeManifest is an otherManifest whose kind is, or is close to, one of
	// rules.oar.dev, and which carries no OAR content: skipped and counted, with a note.
	lookalikeManifest
)

// sortMember tells what validate does with member v. An object with an apiVersion is a
// manifest: a list when its items are an array (as kubectl reads a list), judged in
// rules.oar.dev, skipped in any other group. A manifest that looks like a mistyped one
// of rules.oar.dev is refused instead, since skipping it would leave what it holds
// unchecked: an apiVersion of rules.oar.dev at a version it does not serve or with no
// version, or of a group close to it, and a kind of rules.oar.dev, or close to one,
// under another group when it carries OAR content (see oarContent). The error names the
// field and what was most likely meant. Such a kind without OAR content is a resource
// of another project (GKE's monitoring.googleapis.com OperatorConfig): it is skipped
// with a note.
func sortMember(v any) (memberSort, *diag.Error) {
	obj, _ := v.(map[string]any)
	api, isManifest := obj["apiVersion"].(string)
	if !isManifest {
		return plainMember, nil
	}
	if _, isList := obj["items"].([]any); isList {
		return manifestList, nil
	}
	kind, _ := obj["kind"].(string)
	ours := strings.TrimSuffix(manifestGroup, "/")
	group, version, hasVersion := strings.Cut(api, "/")
	if !hasVersion {
		if _, near := diag.Closest(api, slices.Values([]string{ours})); api == ours || near {
			return 0, meant(diag.New("", "apiVersion", "%q names no version: an apiVersion is GROUP/VERSION, and one without a \"/\" is a version of the core group", api), servedAPIVersion)
		}
		group = "" // the core group: "v1"
	}
	switch {
	case kind == "":
		return 0, diag.New("", "kind", "not an OAR document, nor a manifest: a manifest carries apiVersion and kind, and this one (apiVersion %s) carries no kind", api)
	case group == ours && api != servedAPIVersion:
		return 0, meant(diag.New("", "apiVersion", "%s serves %s alone, not %s", ours, rulesv1alpha1.GroupVersion.Version, version), servedAPIVersion)
	case group == ours && isJudged(kind):
		return judgedManifest, nil
	case group == ours:
		return plainMember, nil
	}
	if _, near := diag.Closest(group, slices.Values([]string{ours})); near {
		return 0, meant(diag.New("", "apiVersion", "API group %q is not %s but close to it; a manifest of another group is skipped, so this %s would go unchecked", group, ours, kind), servedAPIVersion)
	}
	k, near := diag.Closest(kind, maps.Keys(manifestKinds))
	switch {
	case !isJudged(kind) && !near:
		return otherManifest, nil
	case !oarContent(obj):
		return lookalikeManifest, nil
	case isJudged(kind):
		return 0, meant(diag.New("", "apiVersion", "%s is a kind of %s, and %s is another API group; a manifest of another group is skipped, so this one, which carries OAR content, would go unchecked", kind, ours, api), servedAPIVersion)
	}
	return 0, meant(diag.New("", "kind", "%s %s is close to %s, a kind of %s; a manifest of another API group is skipped, so this one, which carries OAR content, would go unchecked", api, kind, k, servedAPIVersion), servedAPIVersion+" "+k)
}

// oarContent reports whether a manifest carries what only an OAR resource holds, in its
// spec or at its top level: oar_capability_version (a Capability), a rule carrying oar
// in rules (a RulePack), or oar_config in config (an OperatorConfig).
func oarContent(obj map[string]any) bool {
	spec, _ := obj["spec"].(map[string]any)
	for _, m := range []map[string]any{spec, obj} {
		if _, ok := m["oar_capability_version"]; ok {
			return true
		}
		rules, _ := m["rules"].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			if _, ok := rule["oar"]; ok {
				return true
			}
		}
		config, _ := m["config"].(map[string]any)
		if _, ok := config["oar_config"]; ok {
			return true
		}
	}
	return false
}

func isJudged(kind string) bool {
	_, judged := manifestKinds[kind]
	return judged
}

// meant ends e with what the manifest most likely meant, as diag.Error.Suggest ends a
// diagnostic about an unknown name.
func meant(e *diag.Error, s string) *diag.Error {
	e.Suggestion = s
	e.Message += fmt.Sprintf("; did you mean %q?", s)
	return e
}

// manifestDecoder decodes the operator's resources as the API server does a create from
// `kubectl apply`, whose field validation is strict by default: a member the schema does
// not know, or one given twice, refuses the object.
var manifestDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := rulesv1alpha1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("oarctl: the rules.oar.dev scheme: %v", err))
	}
	return jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme,
		jsonserializer.SerializerOptions{Strict: true})
}()

// decodeManifest returns the object a manifest creates, in namespace unless it names
// one. The API server refuses some objects before admission: one that does not decode
// (err), or one without a member the CRD requires (required). Their wording is the
// decoder's and the schema's, not the webhook's.
func decodeManifest(v map[string]any, namespace string) (obj client.Object, required field.ErrorList, err error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the manifest as JSON: %w", err)
	}
	decoded, _, err := manifestDecoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	obj = decoded.(client.Object)
	if obj.GetNamespace() == "" {
		obj.SetNamespace(namespace)
	}
	return obj, requiredMembers(obj, v), nil
}

// requiredMembers are the CRD's required members v lacks, as the API server's schema
// validation words them; the object's name is looked up by the others.
func requiredMembers(obj client.Object, v map[string]any) field.ErrorList {
	var errs field.ErrorList
	if obj.GetName() == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required; oarctl validate needs the name"))
	} else {
		errs = append(errs, apivalidation.ValidateObjectMetaAccessor(obj, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	}
	if _, isCapability := obj.(*rulesv1alpha1.Capability); isCapability {
		return errs
	}
	spec, present := v["spec"].(map[string]any)
	if !present {
		return append(errs, field.Required(field.NewPath("spec"), ""))
	}
	ref := field.NewPath("spec", "capabilityRef")
	refObj, hasRef := spec["capabilityRef"].(map[string]any)
	name, hasName := refObj["name"]
	hasName = hasName && name != nil // the API server prunes a null, which then is missing
	switch {
	case !hasRef:
		errs = append(errs, field.Required(ref, ""))
	case !hasName:
		errs = append(errs, field.Required(ref.Child("name"), ""))
	case name == "":
		errs = append(errs, field.Invalid(ref.Child("name"), "", "spec.capabilityRef.name in body should be at least 1 chars long"))
	}
	if config, hasConfig := spec["config"]; !hasConfig || config == nil {
		if _, isConfig := obj.(*rulesv1alpha1.OperatorConfig); isConfig {
			errs = append(errs, field.Required(field.NewPath("spec", "config"), ""))
		}
	}
	return errs
}
