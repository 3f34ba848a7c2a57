package controllers

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	rulesv1alpha1 "github.com/oar-operator/oar-operator/api/v1alpha1"
	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/resource"
)

// identities says which object each pack and configuration of a published bundle
// belongs to, by name. Incumbency goes by identity: a RulePack deleted and created again
// under its name between two reconciles is a newcomer and does not inherit the deleted
// one's published generation. It travels with the bundle, in the ConfigMap's
// resource.PublishedUIDsAnnotation, so a new leader knows it too.
type identities struct {
	Packs   map[string]types.UID `json:"packs,omitempty"`
	Configs map[string]types.UID `json:"configs,omitempty"`
}

// identitiesOf reads the annotation of cm; nil when there is none or it does not decode
// (a bundle written before identities were recorded: every object keeps its name's
// incumbency, as before).
func identitiesOf(cm *corev1.ConfigMap) *identities {
	if cm == nil {
		return nil
	}
	raw, ok := cm.Annotations[resource.PublishedUIDsAnnotation]
	if !ok {
		return nil
	}
	ids := &identities{}
	if err := json.Unmarshal([]byte(raw), ids); err != nil {
		return nil
	}
	return ids
}

// encode is the annotation's value.
func (ids *identities) encode() string {
	raw, _ := json.Marshal(ids) // maps of strings always encode
	return string(raw)
}

// markNewIdentities sets NewIdentity on each input whose name the published bundle
// holds for another object.
func (ids *identities) markNewIdentities(in *bundle.Input, packs []*rulesv1alpha1.RulePack, configs []*rulesv1alpha1.OperatorConfig) {
	if ids == nil {
		return
	}
	for i, p := range packs {
		if uid, ok := ids.Packs[p.Name]; ok && uid != p.UID {
			in.Packs[i].NewIdentity = true
		}
	}
	for i, c := range configs {
		if uid, ok := ids.Configs[c.Name]; ok && uid != c.UID {
			in.Configs[i].NewIdentity = true
		}
	}
}

// identitiesFor says whose each pack and configuration of res.Bundle is: the live
// object's when the result says a generation of it serves, else (a kept bundle still
// holding a deleted object's generation) what prev said.
func identitiesFor(res *bundle.Result, prev *identities, packs []*rulesv1alpha1.RulePack, configs []*rulesv1alpha1.OperatorConfig) *identities {
	ids := &identities{Packs: map[string]types.UID{}, Configs: map[string]types.UID{}}
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
