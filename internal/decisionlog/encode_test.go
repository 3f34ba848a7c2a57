package decisionlog

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/oar-operator/oar-operator/internal/occurrence"
)

// TestSurrogatesSurvive is [OAR-FACT-23]: an occurrence holding lone surrogate code
// points (in a fact, a member name, a tool argument, the session and the content)
// reads back from its line as the occurrence the sidecar decoded, where encoding/json
// would have written U+FFFD.
func TestSurrogatesSurvive(t *testing.T) {
	body := `{"anchor": "tool.pre_invoke", "session_id": "s\ud800", "facts": {"k\udfff": "v\ud83d", "n": [1, {"x": "\udc00"}]},
		"recent_activity": ["a\ud800"], "content": "c\udbff", "tool_call": {"name": "t\ud800", "arguments": {"p": "\udead"}}}`
	want, errs := occurrence.Decode([]byte(body), occurrence.HostMembers)
	if errs != nil {
		t.Fatal(errs)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{Content: ContentFull, Sample: 1})
	w.Log("d", want, 0, sampleDecision(), Session{})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := Read(&buf)
	if err != nil || len(log.Entries) != 1 {
		t.Fatalf("%v, %d entries", err, len(log.Entries))
	}
	if got := log.Entries[0].Occ; !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v\nwant %+v", got, want)
	}
}
