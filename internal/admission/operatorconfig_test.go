package admission

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestOperatorConfigAdmission: a configuration is refused for its shape and version and
// for what it names against the published rule set; it is warned when there is no rule
// set to check against, or when a rule it names waits for its pack to be published.
func TestOperatorConfigAdmission(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	packs := []*rulesv1alpha1.RulePack{
		rulePack(t, ns, "security", "gateway", 0, []map[string]any{
			rule("acme.security", "READ_OUTSIDE_SCOPE"),
			with(rule("acme.security", "AUDIT"), "mandatory", true),
		}),
		rulePack(t, ns, "other", "gateway", 0, []map[string]any{rule("acme.other", "READ_OUTSIDE_SCOPE")}),
	}
	for _, p := range packs {
		mustCreate(t, p)
	}
	published(t, ns, "gateway", packs)
	// later duplicates a published rule, so the controller leaves it out.
	later := rulePack(t, ns, "later", "gateway", 0, []map[string]any{rule("acme.other", "READ_OUTSIDE_SCOPE"), rule("acme.later", "PENDING")})
	mustCreate(t, later)
	seen(t, later)

	c, warned := warningClient(t)
	for _, tc := range []struct {
		name                string
		capability          string
		doc                 map[string]any
		field, clause, rule string
	}{
		{"a member outside the document", "gateway", map[string]any{"oar_config": "1.0", "rules": []any{}},
			"spec.config.rules", "OAR-CFG-1", ""},
		{"a rule that is not loaded", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{"acme.nowhere/GONE"}},
			"spec.config.disable[0]", "OAR-CFG-4", "acme.nowhere/GONE"},
		{"a mandatory rule disabled", "gateway", map[string]any{"oar_config": "1.0", "disable": []any{"acme.security/AUDIT"}},
			"spec.config.disable[0]", "OAR-CFG-5", "acme.security/AUDIT"},
		{"an ambiguous bare id", "gateway", map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"READ_OUTSIDE_SCOPE": "monitor"}},
			"spec.config.enforcement.READ_OUTSIDE_SCOPE", "OAR-CFG-8", ""},
		{"the shape, without a Capability", "absent", map[string]any{"oar_config": "1.0", "enforcement": []any{}},
			"spec.config.enforcement", "OAR-CFG-3", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(ctx, operatorConfig(t, ns, "refused", tc.capability, tc.doc), client.DryRunAll)
			hasCause(t, causes(t, err), tc.field, tc.clause, tc.rule)
			t.Logf("kubectl: %v", err)
			warned.take()
		})
	}
	t.Run("no Capability", func(t *testing.T) {
		doc := map[string]any{"oar_config": "1.0", "disable": []any{"acme.security/READ_OUTSIDE_SCOPE"}}
		if err := c.Create(ctx, operatorConfig(t, ns, "early", "absent", doc), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		t.Logf("warning: %s", hasWarning(t, warned.take(), "spec.capabilityRef.name", `Capability "absent" does not exist`, "[OAR-CFG-1]"))
	})
	t.Run("a rule of a pack not published yet", func(t *testing.T) {
		doc := map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.later/PENDING": "monitor"}}
		if err := c.Create(ctx, operatorConfig(t, ns, "waiting", "gateway", doc), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		t.Logf("warning: %s", hasWarning(t, warned.take(), "[OAR-CFG-4]", "spec.config.enforcement.acme.later/PENDING", `RulePack "later"`))
	})
	t.Run("a rule of a pack not published yet, by bare id", func(t *testing.T) {
		doc := map[string]any{"oar_config": "1.0", "disable": []any{"PENDING"}}
		if err := c.Create(ctx, operatorConfig(t, ns, "waiting-bare", "gateway", doc), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		t.Logf("warning: %s", hasWarning(t, warned.take(), "[OAR-CFG-4]", "spec.config.disable[0]", `RulePack "later"`, "acme.later/PENDING"))
	})
	t.Run("unquoted version says to quote it", func(t *testing.T) {
		err := c.Create(ctx, operatorConfig(t, ns, "unquoted", "gateway", map[string]any{"oar_config": json.Number("1.0")}), client.DryRunAll)
		msg := hasCause(t, causes(t, err), "spec.config.oar_config", "OAR-CFG-1", "")
		if !strings.Contains(msg, "must be a string") || !strings.Contains(msg, "quote") {
			t.Errorf("the refusal does not say to quote the version: %q", msg)
		}
	})
}

// laggingCache is a cache that has not yet seen the RulePacks and OperatorConfigs named
// hidden, created after it was made: what the webhook's informer holds for a moment
// after a GitOps sync creates a pack and the configuration naming its rules together,
// or on a replica whose informers lag the bundle it reads past them.
type laggingCache struct {
	client.Reader
	hidden map[string]bool
}

func (l laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	switch items := list.(type) {
	case *rulesv1alpha1.RulePackList:
		items.Items = slices.DeleteFunc(items.Items, func(p rulesv1alpha1.RulePack) bool { return l.hidden[p.Name] })
	case *rulesv1alpha1.OperatorConfigList:
		items.Items = slices.DeleteFunc(items.Items, func(c rulesv1alpha1.OperatorConfig) bool { return l.hidden[c.Name] })
	}
	return nil
}

func (l laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *rulesv1alpha1.RulePack, *rulesv1alpha1.OperatorConfig:
		if l.hidden[key.Name] {
			return apierrors.NewNotFound(schema.GroupResource{Group: rulesv1alpha1.GroupVersion.Group}, key.Name)
		}
	}
	return l.Reader.Get(ctx, key, obj, opts...)
}

// TestConfigurationOfAPackTheCacheHasNotSeen: a configuration naming a rule of a pack
// created a moment before it — not yet in the webhook's cache — is admitted with the
// "not published yet" warning, as when the cache has caught up: the webhook asks the API
// server before refusing for [OAR-CFG-4]. (make run's demo applies them back to back.)
func TestConfigurationOfAPackTheCacheHasNotSeen(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	base := rulePack(t, ns, "base", "gateway", 0, []map[string]any{rule("acme.base", "A")})
	mustCreate(t, base)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base})
	// fresh duplicates a published rule, so it stays unpublished (Conflict) for good.
	fresh := rulePack(t, ns, "fresh", "gateway", 0, []map[string]any{rule("acme.base", "A"), rule("acme.fresh", "NEW")})
	mustCreate(t, fresh)
	seen(t, fresh)

	mgrMu.Lock()
	reader := cached
	mgrMu.Unlock()
	v := &OperatorConfigValidator{Cluster: &ClientCluster{Reader: laggingCache{Reader: reader, hidden: map[string]bool{"fresh": true}}, APIReader: k8s}}
	doc := map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.fresh/NEW": "monitor"}}
	ws, err := v.ValidateCreate(ctx, operatorConfig(t, ns, "tuning", "gateway", doc))
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	hasWarning(t, ws, "[OAR-CFG-4]", `RulePack "fresh"`, "not published yet")

	// Without a way past the cache, the same configuration is refused.
	v = &OperatorConfigValidator{Cluster: &ClientCluster{Reader: laggingCache{Reader: reader, hidden: map[string]bool{"fresh": true}}}}
	if _, err := v.ValidateCreate(ctx, operatorConfig(t, ns, "tuning", "gateway", doc)); err == nil {
		t.Error("admitted with only the lagging cache: the test shows nothing")
	}
}

// publishedMidCheck is a reader before which the controller publishes between any two
// reads of one bundle ConfigMap: odd reads see before, the bundle as it was before its
// latest pack was published, even reads the cluster as it is.
type publishedMidCheck struct {
	client.Reader
	before *corev1.ConfigMap
	reads  int
}

func (p *publishedMidCheck) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cm, ok := obj.(*corev1.ConfigMap); ok && key == client.ObjectKeyFromObject(p.before) {
		if p.reads++; p.reads%2 == 1 {
			p.before.DeepCopyInto(cm)
			return nil
		}
	}
	return p.Reader.Get(ctx, key, obj, opts...)
}

// TestConfigurationJudgedOnOneStateOfTheBundle: a bundle published while the webhook
// judges a configuration naming the new pack's rule does not make the rule look neither
// published nor pending ([OAR-CFG-4]): the check reads the bundle once, sees the pack
// not yet published, and admits with the "not published yet" warning. (make run's
// tour applies a pack and such a configuration back to back.)
func TestConfigurationJudgedOnOneStateOfTheBundle(t *testing.T) {
	needEnv(t)
	ns := namespace(t)
	ctx := context.Background()
	mustCreate(t, capabilityObject(ns, "gateway", gatewaySpec()))
	base := rulePack(t, ns, "base", "gateway", 0, []map[string]any{rule("acme.base", "A")})
	mustCreate(t, base)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base})
	before := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: resource.BundleName("gateway")}, before); err != nil {
		t.Fatal(err)
	}
	late := rulePack(t, ns, "late", "gateway", 0, []map[string]any{rule("acme.late", "NEW")})
	mustCreate(t, late)
	published(t, ns, "gateway", []*rulesv1alpha1.RulePack{base, late})

	v := &OperatorConfigValidator{Cluster: &ClientCluster{Reader: &publishedMidCheck{Reader: k8s, before: before}}}
	doc := map[string]any{"oar_config": "1.0", "enforcement": map[string]any{"acme.late/NEW": "monitor"}}
	ws, err := v.ValidateCreate(ctx, operatorConfig(t, ns, "tuning", "gateway", doc))
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	hasWarning(t, ws, "[OAR-CFG-4]", `RulePack "late"`, "not published yet")
}

// failingLists is a cluster whose lists of RulePacks (packs) or OperatorConfigs
// (configs) fail, as a cache that cannot sync does.
type failingLists struct {
	*memoryCluster
	packs, configs bool
}

func (f failingLists) RulePacks(ctx context.Context, key types.NamespacedName) ([]rulesv1alpha1.RulePack, error) {
	if f.packs {
		return nil, errors.New("list rule packs: the cache is not synced")
	}
	return f.memoryCluster.RulePacks(ctx, key)
}

func (f failingLists) OperatorConfigs(ctx context.Context, key types.NamespacedName) ([]rulesv1alpha1.OperatorConfig, error) {
	if f.configs {
		return nil, errors.New("list operator configs: the cache is not synced")
	}
	return f.memoryCluster.OperatorConfigs(ctx, key)
}

// TestConfigurationReadsOnlyWhatItsVerdictNeeds: a configuration naming a Capability
// that does not exist is admitted with that warning, the packs and configurations never
// read, so a list that fails does not refuse it; and one judged against a published rule
// set never lists the OperatorConfigs, which it is not judged against.
func TestConfigurationReadsOnlyWhatItsVerdictNeeds(t *testing.T) {
	ctx := context.Background()
	doc := map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/B"}}
	noCapability := failingLists{memoryCluster: &memoryCluster{}, packs: true, configs: true}
	ws, err := (&OperatorConfigValidator{Cluster: noCapability}).ValidateCreate(ctx, operatorConfig(t, "ns", "tuning", "gateway", doc))
	if err != nil {
		t.Fatalf("refused though only the Capability's absence was due: %v", err)
	}
	hasWarning(t, ws, "spec.capabilityRef.name", `Capability "gateway" does not exist`)

	quiet := bundle.Config{Name: "quiet", Generation: 1, Document: map[string]any{"oar_config": "1.0", "disable": []any{"acme.base/K"}}}
	cl := clusterOf(t, []*rulesv1alpha1.RulePack{pack(t, "base", rule("acme.base", "B"), rule("acme.base", "K"))}, nil, quiet)
	if ws, err := (&OperatorConfigValidator{Cluster: failingLists{memoryCluster: cl, configs: true}}).ValidateCreate(ctx, operatorConfig(t, "ns", "tuning", "gateway", doc)); err != nil || len(ws) > 0 {
		t.Errorf("refused (%v) or warned (%q) for a list of OperatorConfigs its verdict does not need", err, ws)
	}
}
