package admission

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// TestCapabilityNameLongerThanALabelValueIsRefused: the controller labels a
// Capability's bundle ConfigMap rules.oar.dev/capability=<name>, and a label value holds
// at most 63 characters, so a Capability with a longer name never gets a bundle. The
// webhook refuses such a Capability and any pack or configuration naming one, naming the
// field; 63 characters pass.
func TestCapabilityNameLongerThanALabelValueIsRefused(t *testing.T) {
	ctx := context.Background()
	long, longest := strings.Repeat("c", 64), strings.Repeat("c", 63)
	cl := &memoryCluster{capabilities: []*rulesv1alpha1.Capability{capabilityObject("ns", longest, gatewaySpec())}}
	doc := map[string]any{"oar_config": "1.0"}
	for _, c := range []struct {
		what, field string
		check       func(name string) error
	}{
		{"Capability", "metadata.name", func(name string) error {
			_, err := (&CapabilityValidator{Cluster: cl}).ValidateCreate(ctx, capabilityObject("ns", name, gatewaySpec()))
			return err
		}},
		{"RulePack", "spec.capabilityRef.name", func(name string) error {
			_, err := (&RulePackValidator{Cluster: cl}).ValidateCreate(ctx, rulePack(t, "ns", "p", name, 1, []map[string]any{rule("acme.sec", "READ")}))
			return err
		}},
		{"OperatorConfig", "spec.capabilityRef.name", func(name string) error {
			_, err := (&OperatorConfigValidator{Cluster: cl}).ValidateCreate(ctx, operatorConfig(t, "ns", "tuning", name, doc))
			return err
		}},
	} {
		if err := c.check(longest); err != nil {
			t.Errorf("%s naming a Capability of 63 characters: refused: %v", c.what, err)
		}
		err := c.check(long)
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s naming a Capability of 64 characters: want Invalid, got %v", c.what, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.field) || !strings.Contains(msg, "at most 63 characters") || !strings.Contains(msg, "rules.oar.dev/capability") {
			t.Errorf("%s: the refusal does not name the field, the bound and the label: %s", c.what, msg)
		}
	}
}

// TestCapabilityNameLongerThanALabelValueIsRefusedByTheCRD: the CRDs refuse the same
// names, also where the webhook is not called.
func TestCapabilityNameLongerThanALabelValueIsRefusedByTheCRD(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	long := strings.Repeat("c", 64)
	if err := k8s.Create(ctx, capabilityObject(ns, long, gatewaySpec())); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "its bundle ConfigMap carries the name as a label value") {
		t.Errorf("Capability of 64 characters: want the CRD's refusal, got %v", err)
	}
	p := rulePack(t, ns, "p", long, 0, []map[string]any{rule("acme.sec", "READ")})
	if err := k8s.Create(ctx, p); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.capabilityRef.name: Too long") {
		t.Errorf("RulePack naming a Capability of 64 characters: want the CRD's refusal, got %v", err)
	}
	oc := operatorConfig(t, ns, "tuning", long, map[string]any{"oar_config": "1.0"})
	if err := k8s.Create(ctx, oc); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.capabilityRef.name: Too long") {
		t.Errorf("OperatorConfig naming a Capability of 64 characters: want the CRD's refusal, got %v", err)
	}
}
