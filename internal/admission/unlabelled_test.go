package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestBundleWhoseLabelsWereRemovedIsStillRead: the manager's cache holds only the
// ConfigMaps with the bundle labels (resource.CacheOptions). A bundle the Capability
// controls whose labels were removed is still the published bundle to the controller
// (resource.OperatorBundle) until it restores them; the webhook reads it past the cache
// and judges against it, not against no bundle at all.
func TestBundleWhoseLabelsWereRemovedIsStillRead(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	x := rulePack(t, ns, "x", "gateway", 0, []map[string]any{rule("acme.x", "A")})
	mustCreate(t, x)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{x})

	// Without a controller running, nothing restores the labels while the webhook reads.
	stopManager()
	t.Cleanup(func() {
		if err := startManager(); err != nil {
			t.Fatalf("restart the manager: %v", err)
		}
	})
	key := types.NamespacedName{Namespace: ns, Name: resource.BundleName("gateway")}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	cm.Labels = nil
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	bundles := managerCache(t)
	if err := bundles.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the manager's cache holds the unlabelled bundle (%v): the test shows nothing", err)
	}
	b, uids, err := (&ClientCluster{Reader: bundles, APIReader: k8s}).Bundle(ctx, types.NamespacedName{Namespace: ns, Name: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	if b == nil || len(b.Packs) != 1 || uids == nil || uids.Packs["x"] != x.UID {
		t.Errorf("the Capability's unlabelled bundle read as bundle %v, identities %+v; want pack x of %s", b, uids, x.UID)
	}
}

// managerCache starts a cache configured as the manager's, until the test ends.
func managerCache(t *testing.T) cache.Cache {
	t.Helper()
	opts := resource.CacheOptions()
	opts.Scheme = env.Scheme
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not start")
	}
	return c
}
