package main

import (
	"encoding/json"
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// manifest is a RulePack, Capability or OperatorConfig that validate gives the admission
// webhook's verdict, and where it came from.
type manifest struct {
	object client.Object
	at     origin
}

// judged are the kinds the webhook judges.
var judged = map[string]bool{"Capability": true, "RulePack": true, "OperatorConfig": true}

// isManifest reports whether a member is an object of a kind the webhook judges. Other
// members, rules.oar.dev objects of another kind included, are classified as before, so
// they are refused by name.
func isManifest(v any) bool {
	obj, _ := v.(map[string]any)
	api, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return strings.HasPrefix(api, manifestGroup) && judged[kind]
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
