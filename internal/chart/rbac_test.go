package chart

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/oar-operator/oar-operator/internal/testenv"
)

// grants flattens rules into the sorted set of single permissions they grant, one
// "apiGroup resource verb resourceName nonResourceURL" per line, so that rules are
// compared for what they allow, whatever their grouping and order.
func grants(rules []rbacv1.PolicyRule) []string {
	set := map[string]bool{}
	orNone := func(s []string) []string {
		if len(s) == 0 {
			return []string{"-"}
		}
		return slices.Clone(s)
	}
	for _, r := range rules {
		groups := orNone(r.APIGroups)
		for i, g := range groups {
			if g == "" {
				groups[i] = `""` // the core group
			}
		}
		for _, g := range groups {
			for _, res := range orNone(r.Resources) {
				for _, v := range orNone(r.Verbs) {
					for _, n := range orNone(r.ResourceNames) {
						for _, u := range orNone(r.NonResourceURLs) {
							set[g+" "+res+" "+v+" "+n+" "+u] = true
						}
					}
				}
			}
		}
	}
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// minus lists the elements of a that b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// configRules reads the rules of the object of that kind in a config/rbac file.
func configRules(tb testing.TB, file, kind string) []rbacv1.PolicyRule {
	tb.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", file))
	if err != nil {
		tb.Fatal(err)
	}
	objs, err := decodeDocuments(data)
	if err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	for _, o := range objs {
		if o.GetKind() == kind {
			var role rbacv1.ClusterRole // a Role's rules have the same shape
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				tb.Fatalf("%s: %v", file, err)
			}
			return role.Rules
		}
	}
	tb.Fatalf("config/rbac/%s holds no %s", file, kind)
	return nil
}

// releasedNames are the objects config/rbac grants by name (config/default's names) and
// what the release "oar-operator" calls them.
var releasedNames = map[string]string{
	"oar-validating-webhook-configuration": "oar-operator-validating-webhook",
	"oar-mutating-webhook-configuration":   "oar-operator-engine-injector",
	"oar-webhook-server-cert":              "oar-operator-webhook-cert",
}

// asReleased is what the chart grants for generated rules: the release's names where
// config/rbac names an object, and nothing on webhook configurations unless the manager
// rotates the certificate itself (selfManaged); nothing of the engine injector's (get
// namespaces, its mutating webhook configuration) unless it is served (injector).
func asReleased(rules []rbacv1.PolicyRule, selfManaged, injector bool) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool {
			webhooks := res == "validatingwebhookconfigurations" || res == "mutatingwebhookconfigurations"
			injectors := res == "namespaces" || res == "mutatingwebhookconfigurations"
			return (!selfManaged && webhooks) || (!injector && injectors)
		})
		if len(r.Resources) == 0 {
			continue
		}
		r.ResourceNames = slices.Clone(r.ResourceNames)
		for i, n := range r.ResourceNames {
			if released, ok := releasedNames[n]; ok {
				r.ResourceNames[i] = released
			}
		}
		out = append(out, r)
	}
	return out
}

// TestRolesGrantExactlyTheGeneratedRules holds the chart to the permissions
// controller-gen derives from the +kubebuilder:rbac markers (config/rbac/role.yaml) and
// to the leader-election Role of config/rbac: no more, no less, but for the names of the
// objects granted by name. The Secret Role, and the rules on webhook configurations,
// exist only where the manager's certificate rotator runs.
func TestRolesGrantExactlyTheGeneratedRules(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			r := mustRender(t, "oar-system", vs)
			compare := func(kind, name string, want []rbacv1.PolicyRule) {
				t.Helper()
				var got rbacv1.ClusterRole
				r.into(t, kind, name, &got)
				if g, w := grants(got.Rules), grants(want); !slices.Equal(g, w) {
					t.Errorf("%s %s differs from config/rbac:\n  grants beyond it %q\n  lacks %q", kind, name, minus(g, w), minus(w, g))
				}
			}
			selfManaged := slices.Contains(vs.kinds, "Role/oar-operator-webhook-cert")
			injector := slices.Contains(vs.kinds, "MutatingWebhookConfiguration/oar-operator-engine-injector")
			compare("ClusterRole", "oar-operator-manager", asReleased(configRules(t, "role.yaml", "ClusterRole"), selfManaged, injector))
			compare("Role", "oar-operator-leader-election", configRules(t, "leader_election_role.yaml", "Role"))
			if selfManaged {
				compare("Role", "oar-operator-webhook-cert", asReleased(configRules(t, "role.yaml", "Role"), true, injector))
			}
			if slices.Contains(vs.kinds, "ClusterRole/oar-operator-metrics-reader") {
				compare("ClusterRole", "oar-operator-metrics-reader", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}})
			}

			sa := "oar-operator"
			if !slices.Contains(vs.kinds, "ServiceAccount/oar-operator") {
				sa = "oar-manager"
			}
			binds := map[string]string{"ClusterRoleBinding/oar-operator-manager": "ClusterRole/oar-operator-manager",
				"RoleBinding/oar-operator-leader-election": "Role/oar-operator-leader-election",
				"RoleBinding/oar-operator-webhook-cert":    "Role/oar-operator-webhook-cert"}
			for binding, role := range binds {
				if !slices.Contains(vs.kinds, binding) {
					continue
				}
				var b rbacv1.RoleBinding // a ClusterRoleBinding has the same shape
				kind, name, _ := strings.Cut(binding, "/")
				r.into(t, kind, name, &b)
				want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "oar-system"}}
				if got := b.RoleRef.Kind + "/" + b.RoleRef.Name; got != role || !slices.Equal(b.Subjects, want) {
					t.Errorf("%s binds %s to %v; want %s to %v", binding, got, b.Subjects, role, want)
				}
			}

			// Chart-only, like the metrics-reader ClusterRole it binds (config/rbac has
			// neither): it grants /metrics to the Prometheus ServiceAccount the values
			// name, never anything to the manager.
			if slices.Contains(vs.kinds, "ClusterRoleBinding/oar-operator-metrics-reader") {
				var b rbacv1.ClusterRoleBinding
				r.into(t, "ClusterRoleBinding", "oar-operator-metrics-reader", &b)
				sa := smValues(t, vs).PrometheusServiceAccount
				want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}
				if got := b.RoleRef.Kind + "/" + b.RoleRef.Name; got != "ClusterRole/oar-operator-metrics-reader" || sa.Name == "" || !slices.Equal(b.Subjects, want) {
					t.Errorf("ClusterRoleBinding oar-operator-metrics-reader binds %s to %v; want the metrics reader to %v", got, b.Subjects, want)
				}
			}
		})
	}
}
