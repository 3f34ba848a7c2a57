// Package resource turns the three custom resources into what the engine and the bundle
// assembly take — OAR documents and assembly inputs — and names the bundle ConfigMap
// they publish to. It sits below both the reconcilers (controllers/) and the admission
// webhooks (internal/admission), so the two judge the same documents the same way
// without importing each other.
package resource

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// Names the bundle ConfigMap carries.
const (
	// BundleSuffix makes the ConfigMap name: <capability>-oar-bundle.
	BundleSuffix = "-oar-bundle"
	// DigestAnnotation repeats the bundle's digest where `kubectl get -o yaml` shows it.
	DigestAnnotation = "rules.oar.dev/bundle-digest"
	// PublishedUIDsAnnotation records, as JSON {"packs":{name:uid},"configs":{name:uid}},
	// which object each published pack and configuration generation belongs to, so a
	// resource deleted and created again under its name is a newcomer, not an incumbent.
	PublishedUIDsAnnotation = "rules.oar.dev/published-uids"
	// LeftOutUIDsAnnotation records, in the same JSON, the packs and configurations an
	// earlier bundle published that this one is published without and that still exist
	// (bundle.Result.Dropped): what they enforced is not in force, and the Capability
	// says so (LeftOut) across reconciles and restarts until each is published again or
	// deleted. Absent when there is none, and on a bundle written before it was recorded.
	LeftOutUIDsAnnotation = "rules.oar.dev/left-out-uids"
	// CapabilityLabel names the Capability a bundle belongs to.
	CapabilityLabel = "rules.oar.dev/capability"
	// ManagedByLabel marks objects this operator writes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is ManagedByLabel's value on them.
	ManagedBy = "oar-operator"
)

// BundleName is the name of a Capability's bundle ConfigMap.
func BundleName(capability string) string { return capability + BundleSuffix }

// CapabilityDocument renders a Capability's spec as the OAR capability document the
// engine loads: the same snake_case members, numbers exact.
func CapabilityDocument(c *rulesv1alpha1.Capability) (map[string]any, error) {
	raw, err := json.Marshal(c.Spec)
	if err != nil {
		return nil, fmt.Errorf("encode capability %s: %w", c.Name, err)
	}
	doc, err := engine.DecodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("decode capability %s: %w", c.Name, err)
	}
	obj, _ := doc.(map[string]any)
	if obj == nil {
		obj = map[string]any{}
	}
	return obj, nil
}

// PackRules decodes a RulePack's rules verbatim. A rule that is not JSON at all (the
// API server never stores one, but the controller does not assume admission ran) is
// reported as a diagnostic on that rule.
func PackRules(p *rulesv1alpha1.RulePack) ([]any, diag.List) {
	rules := make([]any, len(p.Spec.Rules))
	var errs diag.List
	for i, r := range p.Spec.Rules {
		v, err := decodeRaw(r)
		if err != nil {
			e := diag.New("OAR-DOC-1", "", "rule is not a JSON document: %v", err)
			e.Index = i
			errs.Add(e)
			continue
		}
		rules[i] = v
	}
	return rules, errs
}

// ConfigDocument decodes an OperatorConfig's configuration document. A document that
// is not an object is returned as is; the engine refuses it naming [OAR-CFG-1].
func ConfigDocument(c *rulesv1alpha1.OperatorConfig) (any, error) {
	if c.Spec.Config == nil {
		return nil, nil
	}
	return decodeRaw(*c.Spec.Config)
}

func decodeRaw(j apiextensionsv1.JSON) (any, error) {
	if len(j.Raw) == 0 {
		return nil, nil
	}
	return engine.DecodeJSON(j.Raw)
}

// AssemblyPack is a RulePack as assembly sees it; a rule that cannot be read makes the
// generation Refused.
func AssemblyPack(p *rulesv1alpha1.RulePack) bundle.PackInput {
	rules, errs := PackRules(p)
	return bundle.PackInput{
		Name:         p.Name,
		Generation:   p.Generation,
		CreationTime: p.CreationTimestamp.Time,
		Rules:        rules,
		Refused:      errs,
	}
}

// AssemblyConfig is an OperatorConfig as assembly sees it; a document that is not a JSON
// object makes the generation Refused.
func AssemblyConfig(c *rulesv1alpha1.OperatorConfig) bundle.ConfigInput {
	in := bundle.ConfigInput{Name: c.Name, Generation: c.Generation, Order: c.Spec.Order, CreationTime: c.CreationTimestamp.Time}
	doc, err := ConfigDocument(c)
	if err != nil {
		in.Refused.Add(diag.New("OAR-CFG-1", "", "the configuration is not a JSON document: %v", err))
		return in
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		in.Refused.Add(diag.New("OAR-CFG-1", "", "a configuration document must be a JSON object"))
		return in
	}
	in.Document = obj
	return in
}
