package resource

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestLeftOutUIDsOf: a bundle ConfigMap written before the left-out record (no
// annotation), or with one that does not decode, names nothing left out; a record
// written is read back as written, and its published identities are untouched.
func TestLeftOutUIDsOf(t *testing.T) {
	published := (&PublishedUIDs{Packs: map[string]types.UID{"security": "u1"}}).Encode()
	if got := LeftOutUIDsOf(map[string]string{PublishedUIDsAnnotation: published}); got != nil || !got.Empty() {
		t.Errorf("without the annotation: %+v, want nil", got)
	}
	if got := LeftOutUIDsOf(map[string]string{LeftOutUIDsAnnotation: "{not json"}); got != nil {
		t.Errorf("a record that does not decode: %+v, want nil", got)
	}
	rec := &PublishedUIDs{Configs: map[string]types.UID{"promote": "u2"}}
	annotations := map[string]string{PublishedUIDsAnnotation: published, LeftOutUIDsAnnotation: rec.Encode()}
	got := LeftOutUIDsOf(annotations)
	if got.Empty() || got.Configs["promote"] != "u2" || len(got.Packs) != 0 {
		t.Errorf("read back %+v, want promote u2", got)
	}
	if ids := PublishedUIDsOf(annotations); ids.Packs["security"] != "u1" || len(ids.Configs) != 0 {
		t.Errorf("published identities read %+v beside the record", ids)
	}
	if !(&PublishedUIDs{Packs: map[string]types.UID{}}).Empty() {
		t.Error("a record of empty maps is not Empty")
	}
}
