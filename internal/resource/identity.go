package resource

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
)

// PublishedUIDs says which object each pack and configuration of a published bundle
// belongs to, by name: the value of PublishedUIDsAnnotation. Incumbency goes by
// identity, not name: a RulePack deleted and created again under its name (generation 1
// again) is a newcomer, and does not inherit the deleted one's publication. The
// controller writes it with each bundle; the admission webhooks read it to tell the
// published object from one that took its name.
type PublishedUIDs struct {
	Packs   map[string]types.UID `json:"packs,omitempty"`
	Configs map[string]types.UID `json:"configs,omitempty"`
}

// PublishedUIDsOf reads the annotation among a bundle ConfigMap's annotations; nil when
// there is none or it does not decode (a bundle written before identities were
// recorded: every object keeps its name's incumbency).
func PublishedUIDsOf(annotations map[string]string) *PublishedUIDs {
	return uidsOf(annotations, PublishedUIDsAnnotation)
}

// LeftOutUIDsOf reads LeftOutUIDsAnnotation among a bundle ConfigMap's annotations, in
// the PublishedUIDs form; nil when there is none or it does not decode (nothing is
// known to be left out).
func LeftOutUIDsOf(annotations map[string]string) *PublishedUIDs {
	return uidsOf(annotations, LeftOutUIDsAnnotation)
}

func uidsOf(annotations map[string]string, key string) *PublishedUIDs {
	raw, ok := annotations[key]
	if !ok {
		return nil
	}
	ids := &PublishedUIDs{}
	if err := json.Unmarshal([]byte(raw), ids); err != nil {
		return nil
	}
	return ids
}

// Empty reports whether ids names nothing.
func (ids *PublishedUIDs) Empty() bool {
	return ids == nil || len(ids.Packs) == 0 && len(ids.Configs) == 0
}

// Encode is the annotation's value.
func (ids *PublishedUIDs) Encode() string {
	raw, _ := json.Marshal(ids) // maps of strings always encode
	return string(raw)
}

// NewPack reports whether the RulePack named name with the given uid is a new object
// under the name of a published pack: the name is recorded for another object. Without
// a record (ids nil, or the name absent) it is not.
func (ids *PublishedUIDs) NewPack(name string, uid types.UID) bool {
	if ids == nil {
		return false
	}
	recorded, ok := ids.Packs[name]
	return ok && recorded != uid
}

// NewConfig is NewPack for an OperatorConfig.
func (ids *PublishedUIDs) NewConfig(name string, uid types.UID) bool {
	if ids == nil {
		return false
	}
	recorded, ok := ids.Configs[name]
	return ok && recorded != uid
}
