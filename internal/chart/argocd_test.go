package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/testenv"
)

// argoCDHealth returns the health checks of config/argocd/argocd-cm-patch.yaml by kind,
// after checking that it has one, the same, for each of the three kinds.
func argoCDHealth(tb testing.TB) string {
	tb.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "argocd", "argocd-cm-patch.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		tb.Fatalf("argocd-cm-patch.yaml: %v", err)
	}
	var script string
	for _, kind := range []string{"RulePack", "Capability", "OperatorConfig"} {
		s, ok := cm.Data["resource.customizations.health.rules.oar.dev_"+kind]
		if !ok {
			tb.Fatalf("argocd-cm-patch.yaml has no health check for %s", kind)
		}
		if script != "" && s != script {
			tb.Fatalf("argocd-cm-patch.yaml: the health check of %s differs from the others", kind)
		}
		script = s
	}
	return script
}

// luaValue converts decoded JSON into Lua values the way Argo CD hands an object to a
// health check: objects and arrays become tables (arrays indexed from 1), numbers
// Lua numbers.
func luaValue(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, luaValue(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(luaValue(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	default:
		return lua.LNil
	}
}

// health runs the check on obj and returns Argo CD's status and message.
func health(tb testing.TB, script string, obj any) (string, string) {
	tb.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(data, &decoded); err != nil {
		tb.Fatal(err)
	}
	L := lua.NewState()
	defer L.Close()
	L.SetGlobal("obj", luaValue(L, decoded))
	if err := L.DoString(script); err != nil {
		tb.Fatalf("health check: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		tb.Fatalf("health check returned %s, not a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

// TestArgoCDHealth runs the Argo CD health check of config/argocd with gopher-lua, the
// interpreter Argo CD embeds, on each state of the Ready condition the operator writes.
func TestArgoCDHealth(t *testing.T) {
	script := argoCDHealth(t)
	ready := func(gen int64, status metav1.ConditionStatus, reason, message string) []metav1.Condition {
		return []metav1.Condition{
			{Type: "Accepted", Status: metav1.ConditionTrue, Reason: rulesv1alpha1.ReasonLoaded, ObservedGeneration: gen},
			{Type: "Ready", Status: status, Reason: reason, Message: message, ObservedGeneration: gen},
		}
	}
	for _, tc := range []struct {
		name       string
		generation int64
		conditions []metav1.Condition
		want       string
	}{
		{"not judged yet", 1, nil, "Progressing"},
		{"published", 3, ready(3, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished, "in bundle sha256:1"), "Healthy"},
		{"an older generation was published", 4, ready(3, metav1.ConditionTrue, rulesv1alpha1.ReasonPublished, "in bundle"), "Progressing"},
		{"does not load", 2, ready(2, metav1.ConditionFalse, rulesv1alpha1.ReasonLoadFailed, "generation 2 does not load"), "Degraded"},
		{"conflict", 1, ready(1, metav1.ConditionFalse, rulesv1alpha1.ReasonConflict, "acme.x/Y is also in pack b"), "Degraded"},
		{"waits for its capability", 1, ready(1, metav1.ConditionFalse, rulesv1alpha1.ReasonCapabilityMissing, "no Capability"), "Progressing"},
		{"bundle too large", 1, ready(1, metav1.ConditionFalse, rulesv1alpha1.ReasonBundleTooLarge, "over 1 MiB"), "Degraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pack := &rulesv1alpha1.RulePack{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rules.oar.dev/v1alpha1", Kind: "RulePack"},
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Generation: tc.generation},
			}
			pack.Status.Conditions = tc.conditions
			status, message := health(t, script, pack)
			if status != tc.want {
				t.Fatalf("health = %s (%q), want %s", status, message, tc.want)
			}
			for _, c := range tc.conditions {
				if c.Type == "Ready" && c.ObservedGeneration == tc.generation && !strings.Contains(message, c.Message) {
					t.Errorf("message = %q, want the Ready condition's %q", message, c.Message)
				}
			}
		})
	}
}
