package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/oar-operator/oar-operator/internal/inject"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// TestWebhookFlags: webhooks are on by default with self-managed certificates, which
// need the namespace of their Secret; external certificates need nothing more.
func TestWebhookFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	for _, c := range []struct {
		name string
		args []string
		err  string
	}{
		{"self-managed without a namespace", nil, "--webhook-namespace"},
		{"self-managed", []string{"--webhook-namespace=oar-system"}, ""},
		{"external", []string{"--webhook-cert-mode=external"}, ""},
		{"an unknown mode", []string{"--webhook-cert-mode=manual"}, "--webhook-cert-mode"},
		{"webhooks off", []string{"--enable-webhooks=false", "--webhook-cert-mode=manual"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := parseFlags(c.args, io.Discard)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("got %v, want an error naming %s", err, c.err)
			case err == nil && o.webhooks.enabled && (o.webhooks.port != 9443 || o.webhooks.certs.CertDir == ""):
				t.Fatalf("unexpected options %+v", o.webhooks)
			}
		})
	}
	t.Setenv("POD_NAMESPACE", "oar-system")
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.webhooks.certs.Namespace != "oar-system" || !o.webhooks.enabled || o.webhooks.certMode != certSelfManaged {
		t.Fatalf("defaults: %+v %v", o.webhooks, err)
	}
}

// TestRunReportsFlags: --help exits 0, and a flag the manager refuses exits 2 with the
// reason on stderr. No logger exists before the flags are read, so a refusal reported
// only through it would end the manager with nothing said.
func TestRunReportsFlags(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"--help"}, &stderr); code != exitOK || !strings.Contains(stderr.String(), "-webhook-cert-mode") {
		t.Errorf("--help: exit %d, stderr:\n%s\nwant exit 0 and the flags", code, stderr.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--webhook-namespace=oar-system", "--webhook-cert-mode=manual"}, `manager: --webhook-cert-mode must be self-managed or external, not "manual"`},
		{[]string{"--webhook-namespace=oar-system", "--graceful-shutdown-timeout=-1s"}, "manager: --graceful-shutdown-timeout must not be negative"},
		// The flag package writes its own refusal, with the usage: once.
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
	} {
		stderr.Reset()
		if code := run(c.args, &stderr); code != exitUsage || strings.Count(stderr.String(), c.want) != 1 {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d and %q once", c.args, code, stderr.String(), exitUsage, c.want)
		}
	}
}

// TestInjectorFlags: the injector is on by default, never mutates the manager's own
// namespace, rotates the CA of its webhook configuration, and takes the chart's image and
// resources, and the sidecar's runAsUser policy (auto unless said otherwise); a resource
// that is no positive quantity, a memory limit below the request, or a runAsUser that is
// no UID from 1, auto or none, is refused by name.
func TestInjectorFlags(t *testing.T) {
	o, err := parseFlags([]string{"--webhook-namespace=oar-system", "--injector-image=registry.example/oar:v1",
		"--injector-cpu-request=20m", "--injector-memory-request=32Mi", "--injector-memory-limit=1Gi"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	in := o.webhooks.injector
	s := in.sidecar
	if !in.enabled || o.webhooks.certs.MutatingWebhookConfigurationName != "oar-mutating-webhook-configuration" ||
		strings.Join(s.SkipNamespaces, ",") != "kube-system,oar-system" || s.Image != "registry.example/oar:v1" ||
		s.CPURequest.String() != "20m" || s.MemoryRequest.String() != "32Mi" || s.MemoryLimit.String() != "1Gi" {
		t.Fatalf("injector options %+v, certificates %+v", in, o.webhooks.certs)
	}
	o, err = parseFlags([]string{"--webhook-namespace=oar-system", "--enable-injector=false"}, io.Discard)
	if err != nil || o.webhooks.certs.MutatingWebhookConfigurationName != "" {
		t.Fatalf("injector off: %+v %v", o.webhooks.certs, err)
	}
	if _, err := parseFlags([]string{"--webhook-namespace=oar-system", "--injector-memory-limit=0"}, io.Discard); err == nil || !strings.Contains(err.Error(), "injector-memory-limit") {
		t.Fatalf("a zero memory limit: %v", err)
	}
	// Below the request, every labelled pod would be refused for an annotation it lacks.
	if _, err := parseFlags([]string{"--webhook-namespace=oar-system", "--injector-memory-limit=32Mi"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--injector-memory-limit 32Mi is below --injector-memory-request 64Mi") {
		t.Fatalf("a memory limit below the request: %v", err)
	}
	if s.RunAsUser != (inject.RunAsUser{}) {
		t.Fatalf("default runAsUser %+v, want auto", s.RunAsUser)
	}
	for v, want := range map[string]inject.RunAsUser{"none": {Never: true}, "1000680000": {UID: 1000680000}, "auto": {}} {
		want.From = "--injector-run-as-user"
		o, err := parseFlags([]string{"--webhook-namespace=oar-system", "--injector-run-as-user=" + v}, io.Discard)
		if err != nil || o.webhooks.injector.sidecar.RunAsUser != want {
			t.Fatalf("--injector-run-as-user=%s: %+v %v", v, o.webhooks.injector.sidecar.RunAsUser, err)
		}
	}
	for _, v := range []string{"-1", "0", "root", ""} {
		if _, err := parseFlags([]string{"--webhook-namespace=oar-system", "--injector-run-as-user=" + v}, io.Discard); err == nil || !strings.Contains(err.Error(), "injector-run-as-user") || !strings.Contains(err.Error(), "a UID from 1") {
			t.Fatalf("--injector-run-as-user=%q: %v", v, err)
		}
	}
}

// TestInjectorSessionStoreFlags: sessions stay in memory by default; the store and its
// Secret become the sidecar's defaults, checked by the annotation's rules and named by
// flag when refused, and a Secret without a store is refused; so is a pending time the
// engine would refuse.
func TestInjectorSessionStoreFlags(t *testing.T) {
	o, err := parseFlags([]string{"--webhook-namespace=oar-system"}, io.Discard)
	if s := o.webhooks.injector.sidecar; err != nil || s.SessionStore != "" || s.SessionStoreSecret != "" {
		t.Fatalf("defaults: store %q secret %q %v", s.SessionStore, s.SessionStoreSecret, err)
	}
	o, err = parseFlags([]string{"--webhook-namespace=oar-system", "--injector-session-store=rediss://shared-redis.redis:6380/1",
		"--injector-session-store-secret=shared-redis"}, io.Discard)
	if s := o.webhooks.injector.sidecar; err != nil || s.SessionStore != "rediss://shared-redis.redis:6380/1" || s.SessionStoreSecret != "shared-redis" {
		t.Fatalf("shared: store %q secret %q %v", s.SessionStore, s.SessionStoreSecret, err)
	}
	o, err = parseFlags([]string{"--webhook-namespace=oar-system", "--injector-session-store=redis://shared-redis:6379", "--injector-session-store-pending-ttl=20ms"}, io.Discard)
	if s := o.webhooks.injector.sidecar; err != nil || s.SessionStorePendingTTL != 20*time.Millisecond {
		t.Fatalf("pending TTL: %v %v", s.SessionStorePendingTTL, err)
	}
	for _, store := range []string{"memory", ""} {
		o, err = parseFlags([]string{"--webhook-namespace=oar-system", "--injector-session-store=" + store}, io.Discard)
		if s := o.webhooks.injector.sidecar; err != nil || s.SessionStore != "" {
			t.Fatalf("--injector-session-store=%s: store %q %v", store, s.SessionStore, err)
		}
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"--injector-session-store=postgres://db:5432"}, []string{"injector-session-store", "postgres://db:5432", "redis:// or rediss://"}},
		{[]string{"--injector-session-store=redis://:hunter2@shared-redis:6379"}, []string{"injector-session-store", "without a password"}},
		{[]string{"--injector-session-store=redis://shared-redis:6379", "--injector-session-store-secret=Shared_Redis"}, []string{"injector-session-store-secret", "Shared_Redis", "name of a Secret"}},
		{[]string{"--injector-session-store-secret=shared-redis"}, []string{"--injector-session-store-secret", "sessions stay in memory"}},
		{[]string{"--injector-session-store=memory", "--injector-session-store-secret=shared-redis"}, []string{"--injector-session-store-secret", "sessions stay in memory"}},
		{[]string{"--injector-session-store-pending-ttl=0s"}, []string{"injector-session-store-pending-ttl", "whole number of milliseconds"}},
		{[]string{"--injector-session-store-pending-ttl=1.5ms"}, []string{"injector-session-store-pending-ttl", "whole number of milliseconds"}},
		{[]string{"--injector-session-store-pending-ttl=250ms"}, []string{"injector-session-store-pending-ttl", "not below the engine's --session-store-timeout, 250ms"}},
		{[]string{"--injector-session-store-pending-ttl=soon"}, []string{"injector-session-store-pending-ttl", "not a duration"}},
	} {
		_, err := parseFlags(append([]string{"--webhook-namespace=oar-system"}, c.args...), io.Discard)
		if err == nil {
			t.Fatalf("%v accepted", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not say %q", c.args, err, w)
			}
		}
	}
}

// TestInjectorDecisionLogFlags: the decision log is off by default; the flags become
// the sidecar's defaults, checked by the annotations' rules and named when refused.
func TestInjectorDecisionLogFlags(t *testing.T) {
	o, err := parseFlags([]string{"--webhook-namespace=oar-system"}, io.Discard)
	if s := o.webhooks.injector.sidecar; err != nil || s.DecisionLog || s.DecisionLogContent != "" || s.DecisionLogSample != "" {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	o, err = parseFlags([]string{"--webhook-namespace=oar-system", "--injector-decision-log=stdout", "--injector-decision-log-content=hash", "--injector-decision-log-sample=0.1"}, io.Discard)
	if s := o.webhooks.injector.sidecar; err != nil || !s.DecisionLog || s.DecisionLogContent != "hash" || s.DecisionLogSample != "0.1" {
		t.Fatalf("set: %+v %v", s, err)
	}
	for _, c := range []struct{ arg, want string }{
		{"--injector-decision-log=/var/log/d.jsonl", "stdout"},
		{"--injector-decision-log-content=secret", "omit"},
		{"--injector-decision-log-sample=2", "from 0 to 1"},
	} {
		_, err := parseFlags([]string{"--webhook-namespace=oar-system", c.arg}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), strings.Split(strings.TrimPrefix(c.arg, "--"), "=")[0]) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.arg, err)
		}
	}
}

// TestMetricsCertDir: without --metrics-cert-dir controller-runtime generates a
// certificate; with it the certificate must be there, or the manager refuses to start
// rather than serve a self-signed one no scraper can verify.
func TestMetricsCertDir(t *testing.T) {
	dir := t.TempDir()
	parse := func(args ...string) options {
		t.Helper()
		o, err := parseFlags(append([]string{"--webhook-namespace=oar-system"}, args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	if m, err := metricsOptions(parse(), nil); err != nil || m.CertDir != "" || !m.SecureServing || m.FilterProvider == nil {
		t.Errorf("default: cert dir %q, secure %v, %v; want a generated certificate behind authentication", m.CertDir, m.SecureServing, err)
	}
	if _, err := metricsOptions(parse("--metrics-cert-dir="+dir), nil); err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir") {
		t.Errorf("an empty certificate directory: %v; want an error naming --metrics-cert-dir", err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := metricsOptions(parse("--metrics-cert-dir="+dir), nil); err != nil || m.CertDir != dir {
		t.Errorf("with a certificate: cert dir %q, %v; want %s", m.CertDir, err, dir)
	}
	if _, err := metricsOptions(parse("--metrics-cert-dir=/nonexistent", "--metrics-bind-address=0"), nil); err != nil {
		t.Errorf("metrics off: %v; the directory must not matter", err)
	}
}

// TestGracefulShutdownTimeout: the manager waits --graceful-shutdown-timeout (15 s by
// default, not controller-runtime's 30 s) for what is in flight, and config/manager gives
// its pod a grace period that covers it and the lease release after it (5 s), so the
// kubelet does not kill the manager mid-shutdown; the chart and config/manager pass the
// flag themselves, and internal/chart TestShutdownFitsTheGracePeriod checks both with
// the webhooks' preStop drain. A negative timeout, which
// controller-runtime reads as "wait forever", is refused by name.
func TestGracefulShutdownTimeout(t *testing.T) {
	o, err := parseFlags([]string{"--webhook-namespace=oar-system"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	timeout := managerOptions(o, nil, metricsserver.Options{}, nil).GracefulShutdownTimeout
	if timeout == nil || *timeout != 15*time.Second {
		t.Fatalf("graceful shutdown timeout %v; want 15s", timeout)
	}
	if grace := configManagerGracePeriod(t); grace < *timeout+5*time.Second {
		t.Errorf("config/manager's grace period %s does not cover the shutdown timeout %s and 5 s for the lease", grace, *timeout)
	}
	if o, err := parseFlags([]string{"--webhook-namespace=oar-system", "--graceful-shutdown-timeout=40s"}, io.Discard); err != nil || *managerOptions(o, nil, metricsserver.Options{}, nil).GracefulShutdownTimeout != 40*time.Second {
		t.Errorf("--graceful-shutdown-timeout=40s: %v", err)
	}
	if _, err := parseFlags([]string{"--webhook-namespace=oar-system", "--graceful-shutdown-timeout=-1s"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--graceful-shutdown-timeout") {
		t.Errorf("a negative timeout: %v; want an error naming --graceful-shutdown-timeout", err)
	}
}

// configManagerGracePeriod is the terminationGracePeriodSeconds of config/manager's
// Deployment.
func configManagerGracePeriod(t *testing.T) time.Duration {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var dep appsv1.Deployment
		if err := dec.Decode(&dep); errors.Is(err, io.EOF) {
			t.Fatal("config/manager/manager.yaml holds no Deployment")
		} else if err != nil {
			t.Fatal(err)
		}
		if dep.Kind == "Deployment" && dep.Spec.Template.Spec.TerminationGracePeriodSeconds != nil {
			return time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		}
	}
}

// TestManagerCachesBundleConfigMapsOnly: the binary's manager filters its ConfigMap
// cache to bundles, and strips every cached object's managedFields, with
// resource.CacheOptions, as the envtest suites' managers do (testenv.StartManager;
// controllers TestManagerCachesOnlyBundleConfigMaps and
// TestManagerCacheHasNoManagedFields prove what that cache holds).
func TestManagerCachesBundleConfigMapsOnly(t *testing.T) {
	o, err := parseFlags([]string{"--webhook-namespace=oar-system"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cache := managerOptions(o, nil, metricsserver.Options{}, nil).Cache
	if cache.DefaultTransform == nil {
		t.Error("the manager's cache keeps every object's managedFields: it has no DefaultTransform")
	}
	for obj, by := range cache.ByObject {
		if _, ok := obj.(*corev1.ConfigMap); ok && by.Label != nil && by.Label.String() == resource.BundleSelector().String() {
			return
		}
	}
	t.Error("the manager's cache options do not filter ConfigMaps by resource.BundleSelector")
}

func TestMaxConcurrentReconciles(t *testing.T) {
	if o, err := parseFlags([]string{"--webhook-namespace=oar-system"}, io.Discard); err != nil || o.concurrency != 2 {
		t.Errorf("default: %d, %v; want 2", o.concurrency, err)
	}
	if o, err := parseFlags([]string{"--webhook-namespace=oar-system", "--max-concurrent-reconciles=6"}, io.Discard); err != nil || o.concurrency != 6 {
		t.Errorf("--max-concurrent-reconciles=6: %d, %v", o.concurrency, err)
	}
	if _, err := parseFlags([]string{"--webhook-namespace=oar-system", "--max-concurrent-reconciles=0"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--max-concurrent-reconciles") {
		t.Errorf("0: %v; want an error naming --max-concurrent-reconciles", err)
	}
}
