package admission

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
)

// Verdict is the webhook's answer to one object, as kubectl shows it.
type Verdict struct {
	// Webhook is the webhook that answers for the object's kind.
	Webhook string
	// Refusal is what kubectl reports of a refused object — the webhook's status, its
	// message after the API server's `admission webhook "…" denied the request` — or
	// nil when the object is admitted.
	Refusal *apierrors.StatusError
	// Causes are every field error of a refusal, each once, in the order kubectl prints
	// them: the causes Refusal lists, and those its last cause only counts.
	Causes field.ErrorList
	// Warnings are the warnings kubectl prints — the webhook's, as the API server relays
	// them — each with its kind.
	Warnings []Warning
}

// webhooks names the webhook of each kind, as the configuration (webhook.go) does.
var webhooks = map[schema.GroupKind]string{
	rulePackKind:       "vrulepack.rules.oar.dev",
	capabilityKind:     "vcapability.rules.oar.dev",
	operatorConfigKind: "voperatorconfig.rules.oar.dev",
}

// Judge is the webhook offline, for `oarctl validate`: the verdict on each object — a
// RulePack, Capability or OperatorConfig — were it created into a cluster holding all
// the others, which the controller has published what it would of (set.go). The objects
// are not modified; two of one kind, namespace and name are an error.
func Judge(ctx context.Context, objects []client.Object) ([]Verdict, error) {
	set, created, err := newSet(objects)
	if err != nil {
		return nil, err
	}
	// Each object is judged in a view of its own, which reads only what the views
	// share safely: up to GOMAXPROCS views at a time.
	out := make([]Verdict, len(created))
	errs := make([]error, len(created))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(created)) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = judge(ctx, set.without(created[i]), created[i])
			}
		})
	}
	for i := range created {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// judge is the webhook's verdict on obj, created into the cluster cl.
func judge(ctx context.Context, cl Cluster, obj client.Object) (Verdict, error) {
	var ws warnings
	var kind schema.GroupKind
	var err error
	switch o := obj.(type) {
	case *rulesv1alpha1.RulePack:
		kind = rulePackKind
		ws, err = (&RulePackValidator{Cluster: cl}).validate(ctx, o)
	case *rulesv1alpha1.Capability:
		kind = capabilityKind
		ws, err = (&CapabilityValidator{Cluster: cl}).create(ctx, o)
	case *rulesv1alpha1.OperatorConfig:
		kind = operatorConfigKind
		ws, err = (&OperatorConfigValidator{Cluster: cl}).validate(ctx, o)
	}
	v, err := shown(kind, ws, err)
	if err != nil {
		return Verdict{}, fmt.Errorf("%s %s/%s: %w", kind.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return v, nil
}

// newSet copies the objects as the API server creates them, at generation 1, into a
// setCluster, and returns the copies in order.
func newSet(objects []client.Object) (*setCluster, []client.Object, error) {
	type key struct {
		kind string
		name types.NamespacedName
	}
	var capabilities []*rulesv1alpha1.Capability
	var packs []*rulesv1alpha1.RulePack
	var configs []*rulesv1alpha1.OperatorConfig
	created := make([]client.Object, len(objects))
	seen := map[key]bool{}
	for i, obj := range objects {
		k := key{fmt.Sprintf("%T", obj), client.ObjectKeyFromObject(obj)}
		if seen[k] {
			return nil, nil, fmt.Errorf("%s is given twice", k.name)
		}
		seen[k] = true
		switch o := obj.DeepCopyObject().(type) {
		case *rulesv1alpha1.RulePack:
			packs, created[i] = append(packs, o), o
		case *rulesv1alpha1.Capability:
			capabilities, created[i] = append(capabilities, o), o
		case *rulesv1alpha1.OperatorConfig:
			configs, created[i] = append(configs, o), o
		default:
			return nil, nil, fmt.Errorf("%s: a %T is not a RulePack, Capability or OperatorConfig", k.name, obj)
		}
		created[i].SetGeneration(1)
	}
	return newSetCluster(capabilities, packs, configs), created, nil
}

// shown is what kubectl shows of a validator's answer, whose warnings ws the webhook
// answers as ws.response() does. An error that is not an API status — the webhook never
// answers one — is returned.
func shown(kind schema.GroupKind, ws warnings, err error) (Verdict, error) {
	v := Verdict{Webhook: webhooks[kind], Warnings: relayed(ws.list())}
	if err == nil {
		return v, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return Verdict{}, err
	}
	v.Refusal = denied(v.Webhook, status.Status())
	var r *refusal
	if errors.As(err, &r) {
		v.Causes = once(r.all)
	}
	return v, nil
}

// denied is a webhook's refusal as the API server relays it (ToStatusErr of
// k8s.io/apiserver/pkg/admission/plugin/webhook/errors), for the statuses the
// validators answer, which carry a failure code and a message.
func denied(webhook string, status metav1.Status) *apierrors.StatusError {
	status.Message = fmt.Sprintf("admission webhook %q denied the request: %s", webhook, status.Message)
	return &apierrors.StatusError{ErrStatus: status}
}

// once drops the field errors that repeat an earlier one word for word, as the message
// kubectl prints does (field.ErrorList.ToAggregate).
func once(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	var out field.ErrorList
	for _, e := range errs {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	return out
}
