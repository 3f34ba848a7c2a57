package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/testenv"
)

// tour applies the samples and shows what happens to them.
type tour struct {
	env *testenv.Env
	out io.Writer
	// dir holds what the tour writes: the kubeconfig, the bundle volume, the logs.
	dir        string
	kubeconfig string
	// procs are the operator's binaries the tour started, stopped by stop.
	procs []*process
}

const namespace = "default"

// samples are applied in this order; the last one is refused by the webhook.
var samples = []string{
	"rules_v1alpha1_capability.yaml",
	"rules_v1alpha1_rulepack.yaml",
	"rules_v1alpha1_operatorconfig.yaml",
	"rules_v1alpha1_rulepack_broken.yaml",
}

func (t *tour) run(ctx context.Context) error {
	step(t.out, "Starting the manager, bin/manager (bundle controller and admission webhook)")
	mgr, err := t.startManager(ctx)
	if err != nil {
		return err
	}
	t.procs = append(t.procs, mgr)
	fmt.Fprintf(t.out, "its log: %s\n", mgr.log)
	var applied []client.Object
	for _, name := range samples {
		obj, kind, err := t.read(name)
		if err != nil {
			return err
		}
		step(t.out, "kubectl apply -f config/samples/%s", name)
		err = t.env.Client.Create(ctx, obj)
		var refused apierrors.APIStatus
		switch {
		case err == nil:
			fmt.Fprintf(t.out, "%s.rules.oar.dev/%s created\n", strings.ToLower(kind), obj.GetName())
			applied = append(applied, obj)
		case apierrors.IsInvalid(err) && errors.As(err, &refused):
			fmt.Fprintln(t.out, invalidMessage(refused.Status()))
		default:
			return fmt.Errorf("apply %s: %w", name, err)
		}
	}
	step(t.out, "Waiting for the bundle to be published")
	if err := t.waitReady(ctx, applied); err != nil {
		return err
	}
	step(t.out, "kubectl get oar (its three tables in one)")
	if err := t.table(ctx); err != nil {
		return err
	}
	if err := t.showInjection(ctx); err != nil {
		return err
	}
	return t.askSidecar(ctx)
}

// read decodes one sample manifest into its typed object in the demo namespace.
func (t *tour) read(name string) (client.Object, string, error) {
	data, err := os.ReadFile(filepath.Join(t.env.Root, "config", "samples", name))
	if err != nil {
		return nil, "", err
	}
	var head metav1.TypeMeta
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	var obj client.Object
	switch head.Kind {
	case "Capability":
		obj = &rulesv1alpha1.Capability{}
	case "RulePack":
		obj = &rulesv1alpha1.RulePack{}
	case "OperatorConfig":
		obj = &rulesv1alpha1.OperatorConfig{}
	default:
		return nil, "", fmt.Errorf("%s: unexpected kind %q", name, head.Kind)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	obj.SetNamespace(namespace)
	return obj, head.Kind, nil
}

// waitReady waits until every applied object has a Ready condition for its generation.
func (t *tour) waitReady(ctx context.Context, objs []client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, o := range objs {
		for {
			if err := t.env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(conditions(o), rulesv1alpha1.ConditionReady); c != nil && c.ObservedGeneration == o.GetGeneration() && c.Reason != rulesv1alpha1.ReasonPending {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s never became ready: %w", o.GetName(), ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func conditions(o client.Object) []metav1.Condition {
	switch v := o.(type) {
	case *rulesv1alpha1.Capability:
		return v.Status.Conditions
	case *rulesv1alpha1.RulePack:
		return v.Status.Conditions
	case *rulesv1alpha1.OperatorConfig:
		return v.Status.Conditions
	}
	return nil
}

// table prints the three kinds in one table: the Ready condition, rule count and
// Capability that kubectl get oar shows, kind by kind.
func (t *tour) table(ctx context.Context) error {
	w := tabwriter.NewWriter(t.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tNAME\tREADY\tRULES\tCAPABILITY\tREASON")
	ready := func(c []metav1.Condition) (string, string) {
		if r := meta.FindStatusCondition(c, rulesv1alpha1.ConditionReady); r != nil {
			return string(r.Status), r.Reason
		}
		return "", ""
	}
	var caps rulesv1alpha1.CapabilityList
	var packs rulesv1alpha1.RulePackList
	var cfgs rulesv1alpha1.OperatorConfigList
	for _, l := range []client.ObjectList{&caps, &packs, &cfgs} {
		if err := t.env.Client.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return err
		}
	}
	for _, c := range caps.Items {
		s, r := ready(c.Status.Conditions)
		fmt.Fprintf(w, "capability\t%s\t%s\t%d\t-\t%s\n", c.Name, s, c.Status.RuleCount, r)
	}
	for _, p := range packs.Items {
		s, r := ready(p.Status.Conditions)
		fmt.Fprintf(w, "rulepack\t%s\t%s\t%d\t%s\t%s\n", p.Name, s, p.Status.RuleCount, p.Spec.CapabilityRef.Name, r)
	}
	for _, c := range cfgs.Items {
		s, r := ready(c.Status.Conditions)
		fmt.Fprintf(w, "operatorconfig\t%s\t%s\t-\t%s\t%s\n", c.Name, s, c.Spec.CapabilityRef.Name, r)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, c := range caps.Items {
		if c.Status.Bundle != nil {
			fmt.Fprintf(t.out, "\nBundle: ConfigMap %s, digest %s\n", c.Status.Bundle.ConfigMapName, c.Status.Bundle.Digest)
		}
	}
	return nil
}

// invalidMessage is what kubectl prints for an Invalid error: the kind and name, then
// each distinct cause as "field: message", on the same line when there is one and as a
// list when there are more. The API server's message, which names the webhook, it does
// not print.
func invalidMessage(status metav1.Status) string {
	d := status.Details
	if d == nil {
		return "The request is invalid: " + status.Message
	}
	head := "The request is invalid"
	if d.Kind != "" || d.Name != "" {
		head = fmt.Sprintf("The %s %q is invalid", d.Kind, d.Name)
	}
	var causes []string
	for _, c := range d.Causes {
		if msg := c.Field + ": " + c.Message; !slices.Contains(causes, msg) {
			causes = append(causes, msg)
		}
	}
	switch len(causes) {
	case 0:
		return head
	case 1:
		return head + ": " + causes[0]
	}
	return head + ": \n* " + strings.Join(causes, "\n* ")
}

var errNoBundle = errors.New("no bundle was published")

// stop stops the processes the tour started, the last started first.
func (t *tour) stop() {
	for i := len(t.procs) - 1; i >= 0; i-- {
		t.procs[i].stop()
	}
}
