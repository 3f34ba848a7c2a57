package controllers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
)

// TestCapabilityReportsEveryHeldBackResource: a configuration held back for size makes
// the Capability not Ready just as a pack does — a hold-back for size (BundleTooLarge)
// is reported on the Capability as well as on the resource — naming each resource held
// back.
func TestCapabilityReportsEveryHeldBackResource(t *testing.T) {
	c := &rulesv1alpha1.Capability{ObjectMeta: metav1.ObjectMeta{Name: "gw", Generation: 3}}
	ref := &rulesv1alpha1.BundleReference{ConfigMapName: "gw-oar-bundle", Digest: "sha256:abc"}
	for _, tc := range []struct {
		name string
		res  *bundle.Result
		want string
	}{
		{"a pack", &bundle.Result{Packs: map[string]bundle.Outcome{"big": {Reason: bundle.ReasonBundleTooLarge}}}, "big is held back"},
		{"a configuration", &bundle.Result{Configs: map[string]bundle.Outcome{"tuning": {Reason: bundle.ReasonBundleTooLarge}}}, "configuration tuning is held back"},
		{"both", &bundle.Result{Packs: map[string]bundle.Outcome{"big": {Reason: bundle.ReasonBundleTooLarge}},
			Configs: map[string]bundle.Outcome{"tuning": {Reason: bundle.ReasonBundleTooLarge}}}, "big, configuration tuning are held back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := capabilityStatus(c, tc.res, ref)
			ready := meta.FindStatusCondition(st.Conditions, rulesv1alpha1.ConditionReady)
			if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != rulesv1alpha1.ReasonBundleTooLarge ||
				ready.ObservedGeneration != 3 || !strings.Contains(ready.Message, tc.want) {
				t.Errorf("Ready %+v; want False, BundleTooLarge, naming %q", ready, tc.want)
			}
		})
	}
}
