// Package e2e runs the engine sidecar against a real control plane: the bundle
// controller publishes a Capability's bundle ConfigMap, the test lays the ConfigMap's
// data out the way the kubelet mounts it, and the sidecar serves it, then serves the
// next version after the pack changes.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/controllers"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/resource"
	"github.com/oar-operator/oar-operator/internal/sidecar"
	"github.com/oar-operator/oar-operator/internal/sidecar/kubeletdir"
	"github.com/oar-operator/oar-operator/internal/sidecar/sidecartest"
	"github.com/oar-operator/oar-operator/internal/testenv"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	stop, err := startManager()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
		stop()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// startManager runs a manager with the bundle controller, as the operator does.
func startManager() (stop func(), err error) {
	mgr, err := env.StartManager(func(mgr ctrl.Manager) error {
		r := &controllers.BundleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("oar-operator")}
		return r.SetupWithManager(mgr)
	})
	if err != nil {
		return nil, err
	}
	return mgr.Stop, nil
}

// gate is the one rule of the test pack, with the given effect.
func gate(t *testing.T, effect string) []apiextensionsv1.JSON {
	raw, err := json.Marshal(map[string]any{"oar": "1.0", "namespace": "acme.ops", "id": "SHELL_GATE", "kind": "policy",
		"anchor": "tool.pre_invoke", "selector": map[string]any{"tool": []any{"shell"}}, "requires": map[string]any{"profiles": []any{"tool"}},
		"effect": effect})
	if err != nil {
		t.Fatal(err)
	}
	return []apiextensionsv1.JSON{{Raw: raw}}
}

// TestSidecarServesPublishedBundle: the controller publishes, the kubelet-style volume
// swaps, and the sidecar answers from the new rules with the new digest.
func TestSidecarServesPublishedBundle(t *testing.T) {
	ctx := context.Background()
	k8s := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "oar-sidecar-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	capability := &rulesv1alpha1.Capability{}
	data, err := os.ReadFile(env.Root + "/config/samples/rules_v1alpha1_capability.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, capability); err != nil {
		t.Fatal(err)
	}
	capability.Namespace = ns.Name
	pack := &rulesv1alpha1.RulePack{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "acme-gates"},
		Spec:       rulesv1alpha1.RulePackSpec{CapabilityRef: rulesv1alpha1.CapabilityReference{Name: capability.Name}, Rules: gate(t, "warn")},
	}
	for _, obj := range []client.Object{capability, pack} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("create %s: %v", obj.GetName(), err)
		}
	}
	cmKey := types.NamespacedName{Namespace: ns.Name, Name: resource.BundleName(capability.Name)}
	if cmKey.Name != "acme-gateway-oar-bundle" {
		t.Fatalf("bundle ConfigMap %s", cmKey.Name)
	}
	first := waitConfigMap(t, cmKey, func(cm *corev1.ConfigMap) bool { return strings.Contains(cm.Data["bundle.json"], `"acme-gates"`) })

	dir := t.TempDir()
	vol := kubeletdir.New(dir)
	if err := vol.Publish(first.Data, first.BinaryData); err != nil {
		t.Fatal(err)
	}
	base := runSidecar(t, dir)
	eventually(t, "the first bundle served", func() (bool, string) {
		return answer(t, base, first.Annotations[resource.DigestAnnotation], "warn")
	})

	// The pack changes: the controller publishes a new bundle; the kubelet swaps it in.
	// The controller writes the pack's status meanwhile, so the update retries on a
	// conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pack), pack); err != nil {
			return err
		}
		pack.Spec.Rules = gate(t, "block")
		return k8s.Update(ctx, pack)
	}); err != nil {
		t.Fatal(err)
	}
	oldDigest := first.Annotations[resource.DigestAnnotation]
	second := waitConfigMap(t, cmKey, func(cm *corev1.ConfigMap) bool { return cm.Annotations[resource.DigestAnnotation] != oldDigest })
	if err := vol.Publish(second.Data, second.BinaryData); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the updated bundle served", func() (bool, string) {
		return answer(t, base, second.Annotations[resource.DigestAnnotation], "block")
	})
	var info sidecar.BundleInfo
	getJSON(t, base+"/v1/bundle", &info)
	if len(info.Packs) != 1 || info.Packs[0].Name != "acme-gates" || info.Packs[0].Generation != pack.Generation ||
		info.Status.Reloads != 2 || info.Status.Failures != 0 {
		t.Errorf("/v1/bundle: %+v", info)
	}
}

// runSidecar serves a sidecar watching dir on a loopback port until the test ends.
func runSidecar(t *testing.T, dir string) string {
	t.Helper()
	base, _ := sidecartest.Serve(t, sidecar.New(sidecar.Options{BundleDir: dir, ReloadInterval: 20 * time.Millisecond, Log: logr.Discard()}))
	return base
}

// answer evaluates a shell call and reports whether the decision and digest are the
// wanted ones.
func answer(t *testing.T, base, digest, decision string) (bool, string) {
	t.Helper()
	resp, err := http.Post(base+"/v1/evaluate", "application/json",
		strings.NewReader(`{"anchor": "tool.pre_invoke", "session_id": "e2e", "tool_call": {"name": "shell", "arguments": {"cmd": "ls"}}}`))
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("status %d: %s", resp.StatusCode, body)
	}
	a := sidecar.Answer{Decision: &engine.Decision{}}
	if err := json.Unmarshal(body, &a); err != nil {
		return false, err.Error()
	}
	return a.Bundle == digest && a.Decision.Decision == decision, fmt.Sprintf("%s from %s", a.Decision.Decision, a.Bundle)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func waitConfigMap(t *testing.T, key types.NamespacedName, ok func(*corev1.ConfigMap) bool) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	eventually(t, "bundle ConfigMap "+key.Name, func() (bool, string) {
		if err := env.Client.Get(context.Background(), key, cm); err != nil {
			return false, err.Error()
		}
		return ok(cm), cm.Annotations[resource.DigestAnnotation]
	})
	return cm
}

// eventually polls cond until it holds or a minute passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testpoll.Eventually(t, time.Minute, 20*time.Millisecond, what, cond)
}
