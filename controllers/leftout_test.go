package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// createPromotion creates a Capability, packs "security" and "other", and a
// configuration "promote" raising a rule of each to enforce, and returns the
// Capability, "other" and "promote".
func createPromotion(t *testing.T, ns string) (*rulesv1alpha1.Capability, *rulesv1alpha1.RulePack, *rulesv1alpha1.OperatorConfig) {
	t.Helper()
	c := sampleCapability(t, ns)
	create(t, c)
	create(t, pack(ns, "security", c.Name, rulesJSON(t, rule("acme.security", "BLOCK_SHELL", "effect", "block", "enforcement", "monitor"))))
	other := pack(ns, "other", c.Name, rulesJSON(t, rule("acme.other", "X")))
	create(t, other)
	cfg := operatorConfig(t, ns, "promote", c.Name, 0, map[string]any{"oar_config": "1.0",
		"enforcement": map[string]any{"acme.security/BLOCK_SHELL": "enforce", "acme.other/X": "enforce"}})
	create(t, cfg)
	return c, other, cfg
}

// leftOutConfiguration publishes packs "security" (a block shipped in monitor) and
// "other" and a configuration "promote" raising a rule of each to enforce, then deletes
// "other" ([OAR-OPS-7]): promote no longer applies ([OAR-CFG-4]) and the bundle is
// published without it. It returns the Capability, promote and the deleted pack.
func leftOutConfiguration(t *testing.T, ns string) (*rulesv1alpha1.Capability, *rulesv1alpha1.OperatorConfig, *rulesv1alpha1.RulePack) {
	t.Helper()
	c, other, cfg := createPromotion(t, ns)
	waitBundle(t, ns, c.Name, "both packs and the configuration", func(b *bundle.Bundle) bool { return len(b.Packs) == 2 && len(b.Configs) == 1 })
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	if err := k8s.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, ns, c.Name, "security alone", func(b *bundle.Bundle) bool { return len(b.Packs) == 1 && len(b.Configs) == 0 })
	waitLeftOut(t, c, `OperatorConfig "promote"`)
	waitReady(t, cfg, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed)
	return c, cfg, other
}

// waitLeftOut waits until the Capability is Ready=False, LeftOut, naming what.
func waitLeftOut(t *testing.T, c *rulesv1alpha1.Capability, what string) {
	t.Helper()
	if cond := waitReady(t, c, metav1.ConditionFalse, rulesv1alpha1.ReasonLeftOut); !strings.Contains(cond.Message, what) {
		t.Errorf("the Capability's LeftOut message does not name %s: %s", what, cond.Message)
	}
}

// staysLeftOut checks now, and then for d, that the Capability says Ready=False,
// LeftOut, naming what.
func staysLeftOut(t *testing.T, c *rulesv1alpha1.Capability, what string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		cond := meta.FindStatusCondition(conditionsOf(t, c), rulesv1alpha1.ConditionReady)
		if cond == nil || cond.Reason != rulesv1alpha1.ReasonLeftOut || !strings.Contains(cond.Message, what) {
			t.Fatalf("%s is still left out, but the Capability now says %+v", what, cond)
		}
		if !time.Now().Before(end) {
			return
		}
	}
}

// addPackAndWaitForStatus adds an unrelated pack and waits until the Capability's status
// names the bundle published with it: a later reconcile has written the status.
func addPackAndWaitForStatus(t *testing.T, c *rulesv1alpha1.Capability, name string) {
	t.Helper()
	create(t, pack(c.Namespace, name, c.Name, rulesJSON(t, rule("acme."+name, "Y"))))
	b, _ := waitBundle(t, c.Namespace, c.Name, "pack "+name+" published", func(b *bundle.Bundle) bool { _, ok := packNames(b)[name]; return ok })
	eventually(t, "the Capability's status to name the bundle with pack "+name, func() (bool, string) {
		conditionsOf(t, c)
		return c.Status.Bundle != nil && c.Status.Bundle.Digest == b.Digest, fmt.Sprintf("%+v", c.Status.Bundle)
	})
}

// leftOutRecord reads the bundle ConfigMap's record of what it is published without.
func leftOutRecord(t *testing.T, c *rulesv1alpha1.Capability) (*resource.PublishedUIDs, bool) {
	t.Helper()
	_, cm := published(t, c.Namespace, c.Name)
	_, has := cm.Annotations[resource.LeftOutUIDsAnnotation]
	return resource.LeftOutUIDsOf(cm.Annotations), has
}

// TestLeftOutConfigurationKeepsTheCapabilityNotReady (found in review): the bundle was
// published without a configuration that no longer applies, and the Capability said
// LeftOut for one reconcile only: the next one ran against the bundle published
// without it, found nothing dropped, and said Ready=True while the configuration stayed
// out (what it raised to enforce no longer held). It stays LeftOut, through later
// reconciles and a restart of the manager, until the configuration is deleted.
func TestLeftOutConfigurationKeepsTheCapabilityNotReady(t *testing.T) {
	ns := namespace(t)
	c, cfg, _ := leftOutConfiguration(t, ns)
	const what = `OperatorConfig "promote"`
	if rec, _ := leftOutRecord(t, c); rec == nil || rec.Configs["promote"] != cfg.UID {
		t.Errorf("the bundle ConfigMap records %+v as left out, want promote's uid %s", rec, cfg.UID)
	}
	staysLeftOut(t, c, what, 2*time.Second)

	addPackAndWaitForStatus(t, c, "third")
	staysLeftOut(t, c, what, 0)

	stopManager()
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	addPackAndWaitForStatus(t, c, "fourth")
	staysLeftOut(t, c, what, time.Second)

	if err := k8s.Delete(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	if rec, has := leftOutRecord(t, c); has {
		t.Errorf("the configuration was deleted, yet the bundle ConfigMap still records %+v as left out", rec)
	}
}

// TestLeftOutConfigurationIsPublishedWhenWhatItNamesIsRestored: the pack created again
// (a new object under the deleted one's name) gives the configuration what it names: it
// is published again, and the Capability is Ready.
func TestLeftOutConfigurationIsPublishedWhenWhatItNamesIsRestored(t *testing.T) {
	ns := namespace(t)
	c, cfg, other := leftOutConfiguration(t, ns)
	addPackAndWaitForStatus(t, c, "third")
	staysLeftOut(t, c, `OperatorConfig "promote"`, 0)

	create(t, pack(ns, other.Name, c.Name, rulesJSON(t, rule("acme.other", "X"))))
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	if rec, has := leftOutRecord(t, c); has {
		t.Errorf("the configuration is published again, yet the bundle ConfigMap still records %+v as left out", rec)
	}
}

// TestBundleWithoutLeftOutRecordIsRead: a bundle ConfigMap as the previous version
// wrote it has no left-out record. A manager starting over it reads it as before (the
// bundle's packs and configuration are the incumbents): a pack deleted while no manager
// ran leaves the configuration out, which is recorded and keeps the Capability LeftOut.
func TestBundleWithoutLeftOutRecordIsRead(t *testing.T) {
	ns := namespace(t)
	c, other, cfg := createPromotion(t, ns)
	waitReady(t, cfg, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)
	waitReady(t, c, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished)

	stopManager()
	_, cm := published(t, ns, c.Name)
	if _, has := cm.Annotations[resource.LeftOutUIDsAnnotation]; has {
		t.Fatalf("with nothing left out the bundle ConfigMap has annotation %s: %v", resource.LeftOutUIDsAnnotation, cm.Annotations)
	}
	if err := k8s.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pack other gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(other), &rulesv1alpha1.RulePack{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, ns, c.Name, "security alone", func(b *bundle.Bundle) bool { return len(b.Packs) == 1 && len(b.Configs) == 0 })
	waitLeftOut(t, c, `OperatorConfig "promote"`)
	addPackAndWaitForStatus(t, c, "third")
	staysLeftOut(t, c, `OperatorConfig "promote"`, 0)
}
