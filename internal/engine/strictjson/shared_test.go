package strictjson

import (
	"strconv"
	"testing"
)

// A Shared keeps at most sharedBoxesMax string values boxed, and a value it no longer
// has room for decodes as any other.
func TestSharedBoxesAreBounded(t *testing.T) {
	var s Shared
	for i := range sharedBoxesMax + 10 {
		want := "value " + strconv.Itoa(i)
		v, ok := s.Decode([]byte(`["` + want + `"]`))
		if list, isList := v.([]any); !ok || !isList || len(list) != 1 || list[0] != want {
			t.Fatalf("decoded %#v, %v; want [%q]", v, ok, want)
		}
	}
	if len(s.boxes) != sharedBoxesMax {
		t.Errorf("%d values boxed, want %d", len(s.boxes), sharedBoxesMax)
	}
}
