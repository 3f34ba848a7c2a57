package admission

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/controllers"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
	"github.com/oar-operator/oar-operator/internal/testenv"
	"github.com/oar-operator/oar-operator/internal/testpoll"
)

// The suite runs one control plane with config/webhook installed and a manager that
// serves the webhooks and runs the bundle controller, as cmd/manager does.
var (
	env *testenv.Env
	k8s client.Client

	mgrMu sync.Mutex
	// stopMgr stops the running manager; cached reads through the manager's cache.
	stopMgr func()
	cached  client.Reader
)

func TestMain(m *testing.M) {
	// The manager's logs are noise in a passing run; OAR_TEST_VERBOSE shows them.
	ctrl.SetLogger(logr.Discard())
	if os.Getenv("OAR_TEST_VERBOSE") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	}
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	var err error
	if env, err = testenv.Start(testenv.Options{Webhooks: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8s = env.Client
	code := 1
	if err := startManager(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
		stopManager()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// startManager runs a manager serving the webhooks envtest installed and the bundle
// controller, and waits until the webhook server serves. The webhook-outage test stops
// it and starts another.
func startManager() error {
	mgr, err := env.StartManager(func(mgr ctrl.Manager) error {
		if err := (&controllers.BundleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("oar-operator")}).SetupWithManager(mgr); err != nil {
			return err
		}
		if err := Install(mgr, nil); err != nil {
			return err
		}
		return InstallInjector(mgr, nil, injectorOptions())
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for mgr.GetWebhookServer().StartedChecker()(nil) != nil || !mgr.GetCache().WaitForCacheSync(context.Background()) {
		if time.Now().After(deadline) {
			mgr.Stop()
			return errors.New("the webhook server did not start")
		}
		time.Sleep(poll)
	}
	mgrMu.Lock()
	stopMgr, cached = mgr.Stop, mgr.GetClient()
	mgrMu.Unlock()
	return nil
}

func stopManager() {
	mgrMu.Lock()
	defer mgrMu.Unlock()
	if stopMgr != nil {
		stopMgr()
		stopMgr = nil
	}
}

const (
	timeout = 60 * time.Second
	poll    = 20 * time.Millisecond
)

// needEnv skips a test that needs the control plane in -short mode.
func needEnv(t *testing.T) {
	t.Helper()
	if env == nil {
		t.Skip("needs the envtest control plane (not in -short mode)")
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testpoll.Eventually(t, timeout, poll, what, cond)
}

// namespace creates a namespace of its own for a test.
func namespace(t *testing.T) string {
	t.Helper()
	return env.Namespace(t, "admission-")
}

// recorder keeps the warnings the API server sends back.
type recorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (r *recorder) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

// warningClient is a client whose requests' warnings w records.
func warningClient(t *testing.T) (client.Client, *recorder) {
	t.Helper()
	r := &recorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = r
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, r
}

// mustCreate creates obj, failing the test on an error.
func mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

// published waits until the bundle of the Capability holds each pack at its current
// generation and each configuration, as the webhook's cache sees it.
func published(t *testing.T, namespace, capability string, packs []*rulesv1alpha1.RulePack, configs ...string) {
	t.Helper()
	eventually(t, "publication", func() (bool, string) {
		mgrMu.Lock()
		reader := cached
		mgrMu.Unlock()
		cm := &corev1.ConfigMap{}
		if err := reader.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: resource.BundleName(capability)}, cm); err != nil {
			return false, err.Error()
		}
		b, err := bundle.Decode(cm.Data, cm.BinaryData)
		if err != nil {
			return false, err.Error()
		}
		have := map[string]int64{}
		for _, p := range b.Packs {
			have[p.Name] = p.Generation
		}
		for _, p := range packs {
			current := &rulesv1alpha1.RulePack{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), current); err != nil {
				return false, err.Error()
			}
			if have[p.Name] != current.Generation {
				return false, fmt.Sprintf("packs published: %v", have)
			}
		}
		names := map[string]bool{}
		for _, c := range b.Configs {
			names[c.Name] = true
		}
		for _, c := range configs {
			if !names[c] {
				return false, fmt.Sprintf("configurations published: %v", names)
			}
		}
		return true, ""
	})
}

// seen waits until the webhook's cache holds obj.
func seen(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, "the webhook's cache to see "+obj.GetName(), func() (bool, string) {
		mgrMu.Lock()
		reader := cached
		mgrMu.Unlock()
		err := reader.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return err == nil, fmt.Sprint(err)
	})
}

// causes returns the field causes of an Invalid refusal, failing the test on any other
// outcome.
func causes(t *testing.T, err error) []metav1.StatusCause {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid refusal, got %v", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("refusal without details: %v", err)
	}
	return status.Status().Details.Causes
}

// hasCause asserts that one cause is at field and carries the clause and, when given,
// the rule; it returns that cause's message.
func hasCause(t *testing.T, cs []metav1.StatusCause, field, clause, rule string) string {
	t.Helper()
	for _, c := range cs {
		if c.Field == field && strings.Contains(c.Message, "["+clause+"]") && (rule == "" || strings.Contains(c.Message, "(rule "+rule+")")) {
			return c.Message
		}
	}
	t.Fatalf("no cause at %s with [%s] (rule %s) in %v", field, clause, rule, cs)
	return ""
}

// hasWarning asserts that one warning contains every part; it returns it.
func hasWarning(t *testing.T, warnings []string, parts ...string) string {
	t.Helper()
	for _, w := range warnings {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return w
		}
	}
	t.Fatalf("no warning with %q in %q", parts, warnings)
	return ""
}
