package occurrence

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/heapuse"
)

// TestHeapBytesCoverTheHeap: the bodies that cost the heap the most per byte, decoded,
// take no more than HeapBytes says, less what it keeps for evaluation (perByte beyond
// the body); a body that is mostly one string is charged a few times its length.
func TestHeapBytesCoverTheHeap(t *testing.T) {
	heapuse.SkipUnderRace(t)
	const size = 1 << 20
	repeat := func(prefix, item, suffix string) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strings.ReplaceAll(item, "#", fmt.Sprint(i)))
		}
		b.WriteString(suffix)
		return b.String()
	}
	args := func(item string) string {
		return repeat(`{"anchor":"tool.pre_invoke","session_id":"s","tool_call":{"name":"read","arguments":{"x":[`, item, `]}}}`)
	}
	bodies := []struct{ name, body string }{
		{"a list of numbers", args(`1`)},
		{"a list of empty lists", args(`[]`)},
		{"a list of empty objects", args(`{}`)},
		{"a list of one-member objects", args(`{"a":1}`)},
		{"a list of booleans and nulls", args(`true,null`)},
		{"a list of short strings", args(`"a"`)},
		{"a list of escaped strings", args(`"\u00e9"`)},
		{"a list of nested lists", args(`[[[1]]]`)},
		{"arguments of many members", repeat(`{"anchor":"tool.pre_invoke","session_id":"s","tool_call":{"name":"read","arguments":{`, `"k#":[1,2,{"a":"b"}]`, `}}}`)},
		{"facts of many members", repeat(`{"anchor":"model.input","session_id":"s","facts":{`, `"f#":1`, `}}`)},
		{"a long recent_activity", repeat(`{"anchor":"tool.pre_invoke","session_id":"s","recent_activity":[`, `"read"`, `]}`)},
		{"content", fmt.Sprintf(`{"anchor":"model.output","session_id":"s","content":%q}`, strings.Repeat("word ", size/5))},
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			body := []byte(b.body)
			before := heapuse.InUse()
			occ, errs := Decode(body, HostMembers)
			if errs != nil {
				t.Fatal(errs)
			}
			grew := int64(heapuse.InUse() - before)
			charged := HeapBytes(body) - (perByte-1)*int64(len(body))
			t.Logf("%d bytes: decoded %.1f MB (%.1f a byte), charged %.1f MB for it", len(body), float64(grew)/1e6, float64(grew)/float64(len(body)), float64(charged)/1e6)
			if grew > charged {
				t.Errorf("decoding %d bytes took %d bytes of heap, more than the %d charged", len(body), grew, charged)
			}
			runtime.KeepAlive(occ)
			runtime.KeepAlive(body)
		})
	}
}
