package controllers

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestManagerCachesOnlyBundleConfigMaps (found in review): the manager's cache held
// every ConfigMap of the cluster, whose size has nothing to do with the operator's
// resources, under the chart's 256Mi memory limit. It holds the bundle ConfigMaps
// (resource.CacheOptions) and no ConfigMap without their labels, whatever its name: one
// under a bundle's name is read past the cache (TestForeignConfigMapIsLeftAlone,
// TestBundleWhoseLabelsWereRemovedIsHealed).
func TestManagerCachesOnlyBundleConfigMaps(t *testing.T) {
	elsewhere := namespace(t)
	unrelated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: elsewhere, Name: "app-config"}, Data: map[string]string{"k": "v"}}
	create(t, unrelated)
	ns := namespace(t)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: resource.BundleName("other")}, Data: map[string]string{"owner": "someone else"}}
	create(t, foreign)
	c, _ := publishedPack(t, ns)

	mgrMu.Lock()
	reader := cached
	mgrMu.Unlock()
	bundleKey := types.NamespacedName{Namespace: ns, Name: resource.BundleName(c.Name)}
	// The bundle was written after the other two: one watch of all ConfigMaps would have
	// delivered them before it.
	eventually(t, "the bundle in the manager's cache", func() (bool, string) {
		err := reader.Get(ctx, bundleKey, &corev1.ConfigMap{})
		return err == nil, fmt.Sprint(err)
	})
	for _, cm := range []*corev1.ConfigMap{unrelated, foreign} {
		if err := reader.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s/%s, which is no bundle, is in the manager's cache (%v)", cm.Namespace, cm.Name, err)
		}
	}
	var all corev1.ConfigMapList
	if err := reader.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	for _, cm := range all.Items {
		if !resource.LabelledBundle(&cm, cm.Labels[resource.CapabilityLabel]) {
			t.Errorf("ConfigMap %s/%s in the manager's cache has labels %v", cm.Namespace, cm.Name, cm.Labels)
		}
	}
}

// TestManagerCacheHasNoManagedFields: the manager's cache keeps no object's
// metadata.managedFields (resource.CacheOptions), while the API server's copies keep
// theirs, another field manager's included after the manager updated the bundle from
// its cached copy.
func TestManagerCacheHasNoManagedFields(t *testing.T) {
	ns := namespace(t)
	c, p := publishedPack(t, ns)
	bundleKey := types.NamespacedName{Namespace: ns, Name: resource.BundleName(c.Name)}
	const other = "someone-else"
	note := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/note":"kept"}}}`))
	if err := k8s.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bundleKey.Name}}, note, client.FieldOwner(other)); err != nil {
		t.Fatal(err)
	}
	create(t, pack(ns, "second", c.Name, rulesJSON(t, rule("acme.security", "SECOND"))))
	waitBundle(t, ns, c.Name, "the second pack", func(b *bundle.Bundle) bool { return packNames(b)["second"] > 0 })

	mgrMu.Lock()
	reader := cached
	mgrMu.Unlock()
	for _, o := range []struct {
		obj client.Object
		key types.NamespacedName
	}{
		{&rulesv1alpha1.Capability{}, client.ObjectKeyFromObject(c)},
		{&rulesv1alpha1.RulePack{}, client.ObjectKeyFromObject(p)},
		{&corev1.ConfigMap{}, bundleKey},
	} {
		eventually(t, fmt.Sprintf("%T %s in the manager's cache", o.obj, o.key), func() (bool, string) {
			err := reader.Get(ctx, o.key, o.obj)
			return err == nil, fmt.Sprint(err)
		})
		if mf := o.obj.GetManagedFields(); len(mf) != 0 {
			t.Errorf("%T %s in the manager's cache has managedFields of %v", o.obj, o.key, managers(mf))
		}
		live := o.obj.DeepCopyObject().(client.Object)
		if err := k8s.Get(ctx, o.key, live); err != nil {
			t.Fatal(err)
		}
		if len(live.GetManagedFields()) == 0 {
			t.Errorf("%T %s on the API server has no managedFields", o.obj, o.key)
		}
		if _, ok := live.(*corev1.ConfigMap); ok && !slices.ContainsFunc(live.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == other }) {
			t.Errorf("the bundle on the API server lost %s's managedFields entry when the manager updated it: %v", other, managers(live.GetManagedFields()))
		}
	}
}

// managers names the field managers of entries, for a failure.
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var names []string
	for _, e := range entries {
		name := e.Manager
		if e.Subresource != "" {
			name += " (" + e.Subresource + ")"
		}
		names = append(names, name)
	}
	return names
}

// TestRecheckForeign: a name whose bundle ConfigMap is foreign is read again while a
// Capability, pack or configuration waits on it, and not for ever once nothing does (a
// deleted Capability's name, say, whose ConfigMap someone else keeps).
func TestRecheckForeign(t *testing.T) {
	c := &rulesv1alpha1.Capability{}
	packs := []rulesv1alpha1.RulePack{{}}
	configs := []rulesv1alpha1.OperatorConfig{{}}
	for _, tc := range []struct {
		name       string
		capability *rulesv1alpha1.Capability
		packs      []rulesv1alpha1.RulePack
		configs    []rulesv1alpha1.OperatorConfig
		want       time.Duration
	}{
		{"a Capability", c, nil, nil, foreignRecheck},
		{"packs of a missing Capability", nil, packs, nil, foreignRecheck},
		{"configurations of a missing Capability", nil, nil, configs, foreignRecheck},
		{"nothing", nil, nil, nil, 0},
	} {
		if got := recheckForeign(tc.capability, tc.packs, tc.configs).RequeueAfter; got != tc.want {
			t.Errorf("%s: recheck after %v, want %v", tc.name, got, tc.want)
		}
	}
}
