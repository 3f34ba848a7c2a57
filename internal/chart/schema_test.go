package chart

import (
	"strings"
	"testing"
)

// TestSchemaRefusesBadValues proves values.schema.json stops an install whose values
// are misspelt or out of their set, naming the value, rather than rendering a chart
// that silently ignores them.
func TestSchemaRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, values, want string
	}{
		{"misspelt top-level key", "replicas: 3", "replicas"},
		{"misspelt nested key", "webhook: {certManagment: cert-manager}", "certManagment"},
		{"unknown certificate management", "webhook: {certManagement: vault}", "certManagement"},
		{"unknown issuer kind", "webhook: {certManager: {issuerRef: {name: x, kind: Vault}}}", "kind"},
		{"unknown log level", "manager: {logLevel: verbose}", "logLevel"},
		{"no reconcile at a time", "manager: {maxConcurrentReconciles: 0}", "maxConcurrentReconciles"},
		{"unknown pull policy", "image: {pullPolicy: Sometimes}", "pullPolicy"},
		{"zero replicas", "replicaCount: 0", "replicaCount"},
		{"replicas as a string", `replicaCount: "2"`, "replicaCount"},
		{"port out of range", "webhook: {port: 70000}", "port"},
		{"extra argument without dashes", "manager: {extraArgs: [leader-elect]}", "extraArgs"},
		{"malformed digest", "image: {digest: latest}", "digest"},
		{"malformed duration", "webhook: {certManager: {duration: 90 days}}", "duration"},
		{"malformed quantity", "resources: {limits: {memory: 256MB}}", "memory"},
		{"misspelt resource", "resources: {requests: {cpus: 1}}", "cpus"},
		{"bad PDB percentage", `podDisruptionBudget: {minAvailable: "half"}`, "minAvailable"},
		{"misspelt ServiceMonitor key", "metrics: {serviceMonitor: {enable: true}}", "enable"},
		{"ServiceMonitor switch as a string", `metrics: {serviceMonitor: {enabled: "true"}}`, "enabled"},
		{"malformed scrape interval", "metrics: {serviceMonitor: {interval: 30 seconds}}", "interval"},
		{"scrape timeout with units out of order", "metrics: {serviceMonitor: {scrapeTimeout: 10s1m}}", "scrapeTimeout"},
		{"label value not a string", "metrics: {serviceMonitor: {labels: {release: true}}}", "release"},
		{"label key with a space", `metrics: {serviceMonitor: {labels: {"kube prometheus": x}}}`, "kube prometheus"},
		{"label value with a space", `metrics: {serviceMonitor: {labels: {release: "kube prometheus"}}}`, "release"},
		{"skip verification as a string", `metrics: {serviceMonitor: {insecureSkipVerify: "yes"}}`, "insecureSkipVerify"},
		{"token Secret without a key", `metrics: {serviceMonitor: {tokenSecret: {name: prometheus-token, key: ""}}}`, "key"},
		{"misspelt token Secret key", "metrics: {serviceMonitor: {tokenSecret: {secretName: prometheus-token}}}", "secretName"},
		{"Prometheus account without a namespace", "metrics: {serviceMonitor: {prometheusServiceAccount: {name: prometheus}}}", "namespace"},
		{"Prometheus namespace without an account", "metrics: {serviceMonitor: {prometheusServiceAccount: {namespace: monitoring}}}", "name"},
		{"misspelt PrometheusRule key", "metrics: {prometheusRule: {enable: true}}", "enable"},
		{"alert for: not a duration", "metrics: {prometheusRule: {for: 15 minutes}}", "for"},
		{"empty alert for:", `metrics: {prometheusRule: {for: ""}}`, "for"},
		{"severity with a space", `metrics: {prometheusRule: {severity: "very high"}}`, "severity"},
		{"Prometheus namespace not a DNS label", "metrics: {serviceMonitor: {prometheusServiceAccount: {name: prometheus, namespace: Monitoring}}}", "namespace"},
		{"session store not Redis", "injector: {sessionStore: {url: postgres://db:5432}}", "url"},
		{"session store URL with a password", `injector: {sessionStore: {url: "redis://:hunter2@redis:6379"}}`, "url"},
		{"session store password Secret not a name", "injector: {sessionStore: {url: redis://redis:6379, passwordSecret: Shared_Redis}}", "passwordSecret"},
		{"session store password Secret without a store", "injector: {sessionStore: {passwordSecret: shared-redis}}", "url"},
		{"session store password Secret with memory", "injector: {sessionStore: {url: memory, passwordSecret: shared-redis}}", "url"},
		{"pending time not below the engine's store timeout", "injector: {sessionStore: {url: redis://redis:6379, pendingTTL: 250ms}}", "pendingTTL"},
		{"pending time without a unit", "injector: {sessionStore: {url: redis://redis:6379, pendingTTL: \"5\"}}", "pendingTTL"},
		{"pending time not whole milliseconds", "injector: {sessionStore: {url: redis://redis:6379, pendingTTL: 2.5ms}}", "pendingTTL"},
		{"pending time of zero", "injector: {sessionStore: {url: redis://redis:6379, pendingTTL: 0ms}}", "pendingTTL"},
		{"pending time as a number", "injector: {sessionStore: {url: redis://redis:6379, pendingTTL: 5}}", "pendingTTL"},
		{"decision log content not a mode", "injector: {decisionLog: {enabled: true, content: secret}}", "content"},
		{"decision log sample over 1", "injector: {decisionLog: {enabled: true, sample: 2}}", "sample"},
		{"decision log to a file", "injector: {decisionLog: {file: /var/log/d.jsonl}}", "file"},
		{"sidecar user negative", "injector: {runAsUser: -1}", "runAsUser"},
		{"sidecar user root", "injector: {runAsUser: 0}", "runAsUser"},
		{"sidecar user a name", "injector: {runAsUser: nobody}", "runAsUser"},
		{"sidecar user a number as a string", `injector: {runAsUser: "1000680000"}`, "runAsUser"},
		{"sidecar user beyond 2^31-1", "injector: {runAsUser: 4294967296}", "runAsUser"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, "oar-system", tc.values)
			if err == nil {
				t.Fatalf("values %s rendered; want a schema error", tc.values)
			}
			if msg := err.Error(); !strings.Contains(msg, "schema") || !strings.Contains(msg, tc.want) {
				t.Errorf("values %s: error %q does not name the schema and %q", tc.values, msg, tc.want)
			}
		})
	}
}

// TestSchemaAcceptsDocumentedAlternatives renders the alternatives values.yaml documents
// that the value sets do not: an integer log level without other changes, a PDB as a
// number, an existing ServiceAccount, compound scrape durations and prefixed labels, an
// unverified scrape chosen with cert-manager certificates, a session store of memory
// or a Redis without a password Secret, and the sidecar's user never set, or auto.
func TestSchemaAcceptsDocumentedAlternatives(t *testing.T) {
	for _, values := range []string{
		"manager: {logLevel: 5}",
		"podDisruptionBudget: {minAvailable: 2}",
		"serviceAccount: {create: false, name: existing}",
		"image: {tag: v0.2.0}",
		"metrics: {serviceMonitor: {interval: 1m30s, scrapeTimeout: 500ms, labels: {prometheus.example/team: platform, release: kps}}}",
		"{webhook: {certManagement: cert-manager}, metrics: {serviceMonitor: {enabled: true, insecureSkipVerify: true}}}",
		"injector: {sessionStore: {url: memory}}",
		"injector: {sessionStore: {url: redis://redis.redis:6379}}",
		"injector: {sessionStore: {url: redis://redis.redis:6379, pendingTTL: 1ms}}",
		"injector: {sessionStore: {url: redis://redis.redis:6379, pendingTTL: 249ms}}",
		"injector: {decisionLog: {enabled: true}}",
		"injector: {decisionLog: {enabled: true, content: full, sample: 0}}",
		"injector: {runAsUser: none}",
		"injector: {runAsUser: auto}",
	} {
		if _, err := render(t, "oar-system", values); err != nil {
			t.Errorf("values %s: %v", values, err)
		}
	}
}
