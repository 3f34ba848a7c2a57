package controllers

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// publications counts bundle ConfigMap writes. It lives in controller-runtime's
// registry, which the manager serves on /metrics, as the reconcile metrics do.
var publications = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "oar_operator_bundle_publications_total",
	Help: "Bundles written to their ConfigMap (a new digest), per Capability. Only the leader publishes.",
}, []string{"namespace", "capability"})

func init() { ctrlmetrics.Registry.MustRegister(publications) }

// The state metrics: what the resources and their bundles say right now.
var (
	readyDesc = prometheus.NewDesc("oar_operator_resource_ready",
		"1 when the resource's current generation is published (condition Ready=True for it), else 0; reason is the Ready condition's (Pending before the operator has reported on this generation).",
		[]string{"namespace", "kind", "name", "reason"}, nil)
	bundleInfoDesc = prometheus.NewDesc("oar_operator_bundle_info",
		"1 for the digest of each Capability's published bundle; join with the sidecars' oar_engine_bundle_info on digest to find sidecars serving another bundle.",
		[]string{"namespace", "capability", "digest"}, nil)
	bundleRulesDesc = prometheus.NewDesc("oar_operator_bundle_rules",
		"Rules in each Capability's published bundle.",
		[]string{"namespace", "capability"}, nil)
	bundleBytesDesc = prometheus.NewDesc("oar_operator_bundle_bytes",
		"Bytes of each published bundle ConfigMap that count against oar_operator_bundle_limit_bytes (gzip-compressed once the bundle is large).",
		[]string{"namespace", "capability"}, nil)
	bundleLimitDesc = prometheus.NewDesc("oar_operator_bundle_limit_bytes",
		"The size a bundle ConfigMap may reach; a pack that would push it over is held back (reason BundleTooLarge).",
		nil, nil)
)

// stateReadTimeout bounds the cache reads of one scrape: an informer started by the
// scrape itself (an OperatorConfig on a replica that does not lead) waits for its sync.
const stateReadTimeout = 5 * time.Second

// StateCollector exports the readiness of every Capability, RulePack and OperatorConfig
// and the published bundles, read from reader (the manager's cache) at each scrape. Read
// at scrape time rather than set by the reconciler, the figures are the same on every
// replica, follow deletions without bookkeeping, and survive a change of leader.
type StateCollector struct {
	reader client.Reader
}

// NewStateCollector returns a collector reading through reader; register it once, in
// the registry the manager serves.
func NewStateCollector(reader client.Reader) *StateCollector {
	return &StateCollector{reader: reader}
}

var _ prometheus.Collector = (*StateCollector)(nil)

// Describe sends the descriptors of every metric Collect sends.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{readyDesc, bundleInfoDesc, bundleRulesDesc, bundleBytesDesc, bundleLimitDesc} {
		ch <- d
	}
}

// Collect reads the resources and sends their metrics. A kind that cannot be read (the
// cache not started yet) is logged and left out rather than failing the scrape, which
// would drop controller-runtime's metrics too.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), stateReadTimeout)
	defer cancel()
	logger := log.FromContext(ctx).WithName("metrics")
	ch <- prometheus.MustNewConstMetric(bundleLimitDesc, prometheus.GaugeValue, bundle.ConfigMapLimit)

	var capabilities rulesv1alpha1.CapabilityList
	if err := c.reader.List(ctx, &capabilities); err != nil {
		logger.Error(err, "list capabilities for metrics")
	}
	for i := range capabilities.Items {
		cp := &capabilities.Items[i]
		sendReady(ch, "Capability", cp, cp.Status.Conditions)
		if b := cp.Status.Bundle; b != nil {
			ch <- prometheus.MustNewConstMetric(bundleInfoDesc, prometheus.GaugeValue, 1, cp.Namespace, cp.Name, b.Digest)
			ch <- prometheus.MustNewConstMetric(bundleRulesDesc, prometheus.GaugeValue, float64(cp.Status.RuleCount), cp.Namespace, cp.Name)
		}
	}
	var packs rulesv1alpha1.RulePackList
	if err := c.reader.List(ctx, &packs); err != nil {
		logger.Error(err, "list rule packs for metrics")
	}
	for i := range packs.Items {
		sendReady(ch, "RulePack", &packs.Items[i], packs.Items[i].Status.Conditions)
	}
	var configs rulesv1alpha1.OperatorConfigList
	if err := c.reader.List(ctx, &configs); err != nil {
		logger.Error(err, "list operator configs for metrics")
	}
	for i := range configs.Items {
		sendReady(ch, "OperatorConfig", &configs.Items[i], configs.Items[i].Status.Conditions)
	}
	var bundles corev1.ConfigMapList
	if err := c.reader.List(ctx, &bundles, client.MatchingLabels{resource.ManagedByLabel: resource.ManagedBy}); err != nil {
		logger.Error(err, "list bundle configmaps for metrics")
	}
	for i := range bundles.Items {
		cm := &bundles.Items[i]
		capability := cm.Labels[resource.CapabilityLabel]
		if capability == "" || !ownedBy(cm, capability) {
			continue
		}
		ch <- prometheus.MustNewConstMetric(bundleBytesDesc, prometheus.GaugeValue, float64(payloadSize(cm)), cm.Namespace, capability)
	}
}

// sendReady sends obj's readiness: its Ready condition when the condition speaks of the
// current generation, else 0 with reason Pending.
func sendReady(ch chan<- prometheus.Metric, kind string, obj metav1.Object, conds []metav1.Condition) {
	value, reason := 0.0, rulesv1alpha1.ReasonPending
	if ready := meta.FindStatusCondition(conds, rulesv1alpha1.ConditionReady); ready != nil && ready.ObservedGeneration == obj.GetGeneration() {
		reason = ready.Reason
		if ready.Status == metav1.ConditionTrue {
			value = 1
		}
	}
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, value, obj.GetNamespace(), kind, obj.GetName(), reason)
}

// payloadSize is what the API server counts against a ConfigMap's size limit: the
// values of data and binaryData.
func payloadSize(cm *corev1.ConfigMap) int {
	n := 0
	for _, v := range cm.Data {
		n += len(v)
	}
	for _, v := range cm.BinaryData {
		n += len(v)
	}
	return n
}
