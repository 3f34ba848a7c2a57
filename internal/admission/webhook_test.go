package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestAfterReady: the webhooks are registered once the certificate is ready, on every
// replica, and not at all when the manager stops first.
func TestAfterReady(t *testing.T) {
	ready, ran := make(chan struct{}), make(chan struct{})
	a := &afterReady{ready: ready, run: func(context.Context) error { close(ran); return nil }}
	if a.NeedLeaderElection() {
		t.Error("registration waits for leader election; every replica serves the webhooks")
	}
	done := make(chan error, 1)
	go func() { done <- a.Start(context.Background()) }()
	select {
	case <-ran:
		t.Fatal("registered before the certificate was ready")
	case <-time.After(50 * time.Millisecond):
	}
	close(ready)
	<-ran
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := &afterReady{ready: make(chan struct{}), run: func(context.Context) error {
		t.Error("registered after the manager stopped")
		return nil
	}}
	if err := never.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestServingCheckBeforeRegistration: the readiness check fails while the webhooks wait
// for their certificate (without asking the manager for its webhook server, which would
// start it).
func TestServingCheckBeforeRegistration(t *testing.T) {
	if err := servingCheck(nil, make(chan struct{}))(nil); err == nil {
		t.Fatal("ready before the webhooks are registered")
	}
}

// kindsRead is a client.Reader that records the kind of every object read through it,
// and of the items of every list.
type kindsRead struct {
	client.Reader
	kinds map[string]bool
}

func (r *kindsRead) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.record(obj)
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *kindsRead) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.record(list)
	return r.Reader.List(ctx, list, opts...)
}

func (r *kindsRead) record(obj runtime.Object) {
	if gvk, err := apiutil.GVKForObject(obj, env.Scheme); err == nil {
		r.kinds[strings.TrimSuffix(gvk.Kind, "List")] = true
	}
}

// warmingManager is a manager whose cache records the kind of every informer asked for.
type warmingManager struct {
	ctrl.Manager
	cache *informersAskedFor
}

func (m warmingManager) GetCache() cache.Cache { return m.cache }

type informersAskedFor struct {
	cache.Cache
	kinds map[string]bool
}

func (c *informersAskedFor) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk, err := apiutil.GVKForObject(obj, env.Scheme); err == nil {
		c.kinds[gvk.Kind] = true
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

// TestRegisterWarmsEveryInformerValidationReads: before the webhooks serve, register
// starts the informer of every kind the validators read through the cache, so that no
// review, on a replica that runs no controller, starts one and waits for its sync
// inside the request. What they read is recorded while each validator judges a change
// against a published pack and configuration.
func TestRegisterWarmsEveryInformerValidationReads(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	gateway := capabilityObject(ns, "gateway", gatewaySpec())
	mustCreate(t, gateway)
	base := rulePack(t, ns, "base", "gateway", 0, []map[string]any{rule("acme.base", "A")})
	mustCreate(t, base)
	mustCreate(t, operatorConfig(t, ns, "quiet", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/A"}}))
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base}, "quiet")

	reads := &kindsRead{Reader: k8s, kinds: map[string]bool{}}
	cl := &ClientCluster{Reader: reads}
	if _, err := (&RulePackValidator{Cluster: cl}).ValidateCreate(ctx, rulePack(t, ns, "more", "gateway", 0, []map[string]any{rule("acme.more", "M")})); err != nil {
		t.Fatal(err)
	}
	if _, err := (&OperatorConfigValidator{Cluster: cl}).ValidateCreate(ctx, operatorConfig(t, ns, "tuning", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/A"}})); err != nil {
		t.Fatal(err)
	}
	wider := gateway.DeepCopy()
	wider.Spec.Detectors = append(wider.Spec.Detectors, "detector://other")
	if _, err := (&CapabilityValidator{Cluster: cl}).ValidateUpdate(ctx, gateway, wider); err != nil {
		t.Fatal(err)
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Cache: resource.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	warmed := &informersAskedFor{Cache: mgr.GetCache(), kinds: map[string]bool{}}
	if err := register(ctx, warmingManager{Manager: mgr, cache: warmed}); err != nil {
		t.Fatal(err)
	}
	if len(reads.kinds) < 4 {
		t.Fatalf("the validators read only %v: the test shows little", reads.kinds)
	}
	for kind := range reads.kinds {
		if !warmed.kinds[kind] {
			t.Errorf("validation reads %s through the cache, but register does not start its informer (it starts %v)", kind, warmed.kinds)
		}
	}
}
