package main

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oar-operator/oar-operator/internal/admission"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	enginetypes "github.com/oar-operator/oar-operator/internal/engine/types"
)

// readSet reads the members of file for validate (see readMember). array says the
// file is one array of members: OAR documents may be written so ([OAR-DOC-31]), but
// kubectl reads such a file as one object, which an array is not, so an array holding
// a manifest is refused, as kubectl would refuse to apply it.
func (l *loader) readSet(file string, members []any, array bool, namespace string, in *inputs) {
	for i, m := range members {
		if obj, ok := m.(map[string]any); ok && array {
			if _, isManifest := obj["apiVersion"]; isManifest {
				l.errorf(file, "%s: kubectl reads a file as one object or as YAML documents, and this one is an array: write its manifests as YAML documents separated by ---, or as the items of a List (kind: List)", memberOrigin(file, i).path)
				continue
			}
		}
		l.readMember(m, memberOrigin(file, i), namespace, in)
	}
}

// readMember reads one member for validate, as sortMember sorts it: a manifest of a
// kind the webhook judges joins the set, in namespace unless it names one, once the API
// server would take it; the items of a list are read in turn; a manifest of another API
// group is counted as skipped, with a note when its kind is, or is close to, one of
// rules.oar.dev; any other member is classified as a plain document.
func (l *loader) readMember(m any, at origin, namespace string, in *inputs) {
	what, e := sortMember(m)
	switch {
	case e != nil:
		l.report(at, e)
	case what == otherManifest:
		in.others++
	case what == lookalikeManifest:
		in.others++
		obj := m.(map[string]any)
		fmt.Fprintf(l.w, "%s: %s: note: %s %s is skipped as a resource of another API group: it carries no OAR content\n", at.file, at.path, obj["apiVersion"], obj["kind"])
	case what == manifestList:
		items, _ := m.(map[string]any)["items"].([]any)
		for j, item := range items {
			itemAt := origin{file: at.file, path: fmt.Sprintf("%s.items[%d]", at.path, j)}
			obj, _ := item.(map[string]any)
			if _, isManifest := obj["apiVersion"]; !isManifest {
				l.report(itemAt, diag.New("", "", "the items of a list are manifests, each with apiVersion and kind; got %s", enginetypes.DescribeJSON(item)))
				continue
			}
			l.readMember(item, itemAt, namespace, in)
		}
	case what == judgedManifest:
		obj, required, err := decodeManifest(m.(map[string]any), namespace)
		switch {
		case err != nil:
			l.errorf(at.file, "%s: the API server would refuse it before admission: %v", at.path, err)
		case len(required) > 0:
			l.refusal(at, fmt.Sprintf("the API server would refuse it before admission: %s %q is invalid", obj.GetObjectKind().GroupVersionKind().GroupKind(), obj.GetName()), required)
		default:
			in.manifests = append(in.manifests, manifest{object: obj, at: at})
		}
	default:
		in.add(l.classify(m, at, anyKind))
	}
}

// unique drops, and reports, a manifest naming the same object as an earlier one: in a
// cluster the second would replace the first, so a set names each object once.
func (l *loader) unique(ms []manifest) []manifest {
	type key struct {
		kind string
		name types.NamespacedName
	}
	first := map[key]origin{}
	var out []manifest
	for _, m := range ms {
		k := key{kindOf(m.object), client.ObjectKeyFromObject(m.object)}
		if at, ok := first[k]; ok {
			l.errorf(m.at.file, "%s: %s %q in namespace %q is given again (first at %s %s); a set names each object once",
				m.at.path, k.kind, k.name.Name, k.name.Namespace, at.file, at.path)
			continue
		}
		first[k] = m.at
		out = append(out, m)
	}
	return out
}

// judge prints the webhook's verdict on each manifest — its warnings, and for a refused
// one what kubectl prints, cause by cause — and returns the summary of those admitted.
func (l *loader) judge(ms []manifest) string {
	objects := make([]client.Object, len(ms))
	for i, m := range ms {
		objects[i] = m.object
	}
	verdicts, err := admission.Judge(context.Background(), objects)
	if err != nil {
		l.fail("%v", err)
		return ""
	}
	admitted := map[string]int{}
	warned := 0
	for i, v := range verdicts {
		at := ms[i].at
		for _, w := range v.Warnings {
			l.warning(at.file, w.Kind, at.path+": "+w.Text)
		}
		if len(v.Warnings) > 0 {
			warned++
		}
		if v.Refusal == nil {
			admitted[kindOf(ms[i].object)]++
			continue
		}
		if len(v.Causes) == 0 {
			l.errorf(at.file, "%s: %v", at.path, v.Refusal)
			continue
		}
		d := v.Refusal.Status().Details
		l.refusal(at, fmt.Sprintf("admission webhook %q would deny the request: %s.%s %q is invalid", v.Webhook, d.Kind, d.Group, d.Name), v.Causes)
	}
	var kinds []string
	total := 0
	for _, k := range []string{"Capability", "RulePack", "OperatorConfig"} {
		if n := admitted[k]; n > 0 {
			kinds = append(kinds, plural(n, k))
			total += n
		}
	}
	summary := fmt.Sprintf("%s admitted (%s)", plural(total, "manifest"), strings.Join(kinds, ", "))
	if warned > 0 {
		summary += fmt.Sprintf(", %d with warnings", warned)
	}
	return summary
}

// refusal prints a refused manifest: a line saying who refuses it, then one line per
// cause, at the path into the resource.
func (l *loader) refusal(at origin, header string, causes field.ErrorList) {
	l.errorf(at.file, "%s: %s", at.path, header)
	for _, c := range causes {
		fmt.Fprintf(l.w, "%s: %s: %s\n", at.file, diag.JoinPath(at.path, c.Field), c.ErrorBody())
	}
}

// kindOf is the kind a decoded manifest declared.
func kindOf(obj client.Object) string {
	return obj.GetObjectKind().GroupVersionKind().Kind
}

// plural is "1 noun" or "n nouns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
