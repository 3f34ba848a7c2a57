package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// identitiesOf reads the resource.PublishedUIDs of cm; nil when there is none or it
// does not decode (a bundle written before identities were recorded: every object keeps
// its name's incumbency, as before).
func identitiesOf(cm *corev1.ConfigMap) *resource.PublishedUIDs {
	if cm == nil {
		return nil
	}
	return resource.PublishedUIDsOf(cm.Annotations)
}

// markNewIdentities sets NewIdentity on each input whose name the published bundle
// holds for another object.
func markNewIdentities(ids *resource.PublishedUIDs, in *bundle.Input, packs []*rulesv1alpha1.RulePack, configs []*rulesv1alpha1.OperatorConfig) {
	for i, p := range packs {
		if ids.NewPack(p.Name, p.UID) {
			in.Packs[i].NewIdentity = true
		}
	}
	for i, c := range configs {
		if ids.NewConfig(c.Name, c.UID) {
			in.Configs[i].NewIdentity = true
		}
	}
}

// identitiesFor says whose each pack and configuration of res.Bundle is: the live
// object's when the result says a generation of it serves, else (a kept bundle still
// holding a deleted object's generation) what prev said.
func identitiesFor(res *bundle.Result, prev *resource.PublishedUIDs, packs []*rulesv1alpha1.RulePack, configs []*rulesv1alpha1.OperatorConfig) *resource.PublishedUIDs {
	ids := &resource.PublishedUIDs{Packs: map[string]types.UID{}, Configs: map[string]types.UID{}}
	if res.Bundle == nil {
		return ids
	}
	live := map[string]types.UID{}
	for _, p := range packs {
		if res.Packs[p.Name].PublishedGeneration > 0 {
			live[p.Name] = p.UID
		}
	}
	for _, p := range res.Bundle.Packs {
		if uid, ok := live[p.Name]; ok {
			ids.Packs[p.Name] = uid
		} else if prev != nil && prev.Packs[p.Name] != "" {
			ids.Packs[p.Name] = prev.Packs[p.Name]
		}
	}
	clear(live)
	for _, c := range configs {
		if res.Configs[c.Name].PublishedGeneration > 0 {
			live[c.Name] = c.UID
		}
	}
	for _, c := range res.Bundle.Configs {
		if uid, ok := live[c.Name]; ok {
			ids.Configs[c.Name] = uid
		} else if prev != nil && prev.Configs[c.Name] != "" {
			ids.Configs[c.Name] = prev.Configs[c.Name]
		}
	}
	return ids
}

// leftOutOf reads the resource.LeftOutUIDsAnnotation of cm; nil when there is none (a
// bundle written before it was recorded: nothing is known to be left out).
func leftOutOf(cm *corev1.ConfigMap) *resource.PublishedUIDs {
	if cm == nil {
		return nil
	}
	return resource.LeftOutUIDsOf(cm.Annotations)
}

// leftOutValue is the annotation's value for what a bundle is published without; ""
// when nothing is, and the annotation is then left off.
func leftOutValue(ids *resource.PublishedUIDs) string {
	if ids.Empty() {
		return ""
	}
	return ids.Encode()
}

// stillLeftOut is bundle.Input.LeftOut: what the record names that is still the same
// object, not being deleted. A left-out object deleted, or replaced by another under
// its name, is resolved: it leaves the record.
func stillLeftOut(rec *resource.PublishedUIDs, packs []*rulesv1alpha1.RulePack, configs []*rulesv1alpha1.OperatorConfig) []bundle.Ref {
	if rec.Empty() {
		return nil
	}
	var out []bundle.Ref
	for _, p := range packs {
		if uid, ok := rec.Packs[p.Name]; ok && uid == p.UID {
			out = append(out, bundle.Ref{Name: p.Name})
		}
	}
	for _, c := range configs {
		if uid, ok := rec.Configs[c.Name]; ok && uid == c.UID {
			out = append(out, bundle.Ref{Name: c.Name, Config: true})
		}
	}
	return out
}

// leftOutIdentities records the objects dropped names (bundle.Result.Dropped, all of
// them given, so live); nil when it names none.
func leftOutIdentities(dropped []bundle.Ref, packs []*rulesv1alpha1.RulePack, configs []*rulesv1alpha1.OperatorConfig) *resource.PublishedUIDs {
	if len(dropped) == 0 {
		return nil
	}
	packUIDs, configUIDs := map[string]types.UID{}, map[string]types.UID{}
	for _, p := range packs {
		packUIDs[p.Name] = p.UID
	}
	for _, c := range configs {
		configUIDs[c.Name] = c.UID
	}
	ids := &resource.PublishedUIDs{Packs: map[string]types.UID{}, Configs: map[string]types.UID{}}
	for _, d := range dropped {
		if d.Config {
			ids.Configs[d.Name] = configUIDs[d.Name]
		} else {
			ids.Packs[d.Name] = packUIDs[d.Name]
		}
	}
	return ids
}
