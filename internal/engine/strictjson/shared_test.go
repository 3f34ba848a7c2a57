package strictjson

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// A Shared keeps at most sharedMax string values boxed and sharedMax small arrays,
// and a value it no longer has room for decodes as any other.
func TestSharedIsBounded(t *testing.T) {
	var s Shared
	for i := range sharedMax + 10 {
		want := "value " + strconv.Itoa(i)
		v, ok := s.Decode([]byte(`[["` + want + `"]]`))
		if list, isList := v.([]any); !ok || !isList || len(list) != 1 || !reflect.DeepEqual(list[0], []any{want}) {
			t.Fatalf("decoded %#v, %v; want [[%q]]", v, ok, want)
		}
	}
	if len(s.boxes) != sharedMax || len(s.values) != sharedMax {
		t.Errorf("%d values boxed and %d arrays kept, want %d", len(s.boxes), len(s.values), sharedMax)
	}
}

// A small array or object is shared by the documents holding its very text, and only
// by them; a long or deep one is each document's own.
func TestSharedValuesByText(t *testing.T) {
	var s Shared
	member := func(doc, key string) any {
		t.Helper()
		v, ok := s.Decode([]byte(doc))
		if !ok {
			t.Fatalf("%s: refused", doc)
		}
		return v.(map[string]any)[key]
	}
	same := func(a, b any) bool {
		return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
	}
	small := `{"profiles":["tool","session"]}`
	first := member(`{"id":"A","requires":`+small+`}`, "requires")
	if again := member(`{"id":"B","requires":`+small+`}`, "requires"); !same(first, again) {
		t.Error("the same small object is decoded again")
	}
	if other := member(`{"id":"C","requires":{"profiles":["tool","sessions"]}}`, "requires"); same(first, other) ||
		!reflect.DeepEqual(other, map[string]any{"profiles": []any{"tool", "sessions"}}) {
		t.Errorf("another object is the first one: %#v", other)
	}
	long := `["` + strings.Repeat("x", sharedTextMax) + `"]`
	if a, b := member(`{"l":`+long+`}`, "l"), member(`{"l":`+long+`}`, "l"); same(a, b) {
		t.Error("an array longer than sharedTextMax is shared")
	}
	// Each level is too long to be shared, and the array is one level too deep.
	level := `{"pad":"` + strings.Repeat("x", sharedTextMax) + `","d":`
	deep := strings.Repeat(level, sharedDepthMax+1) + `[1]` + strings.Repeat(`}`, sharedDepthMax+1)
	a, _ := s.Decode([]byte(deep))
	b, _ := s.Decode([]byte(deep))
	for range sharedDepthMax + 1 {
		a, b = a.(map[string]any)["d"], b.(map[string]any)["d"]
	}
	if same(a, b) {
		t.Error("an array deeper than sharedDepthMax is shared")
	}
}

// An array shared where it is shallow is refused where it is too deep.
func TestSharedValueDeepIsRefused(t *testing.T) {
	var s Shared
	if _, ok := s.Decode([]byte(`{"a":[[1]]}`)); !ok {
		t.Fatal("refused")
	}
	deep := strings.Repeat("[", MaxDepth-1) + `[[1]]` + strings.Repeat("]", MaxDepth-1)
	if v, ok := s.Decode([]byte(deep)); ok {
		t.Errorf("decoded %d levels: %v", MaxDepth+2, v)
	}
}

// A string longer than sharedStringMax is not boxed for the other documents.
func TestSharedLongStringIsNotBoxed(t *testing.T) {
	var s Shared
	short, long := strings.Repeat("s", sharedStringMax), strings.Repeat("l", sharedStringMax+1)
	for range 2 {
		if v, ok := s.Decode([]byte(`["` + short + `","` + long + `"]`)); !ok || !reflect.DeepEqual(v, []any{short, long}) {
			t.Fatalf("decoded %#v, %v", v, ok)
		}
	}
	if _, ok := s.boxes[long]; ok {
		t.Error("the long string is boxed")
	}
	if _, ok := s.boxes[short]; !ok {
		t.Error("the short string is not boxed")
	}
}

// The scratch a string with escapes needs is passed from one document to the next: a
// document met again allocates nothing for it.
func TestSharedKeepsScratch(t *testing.T) {
	var s Shared
	data := []byte(`{"when":"tool == \"read\" && fire_count < 5"}`)
	s.Decode(data)
	if cap(s.scratch) == 0 {
		t.Fatal("the scratch was not kept")
	}
	// The text's copy, the map and its room, the unescaped string: nothing for scratch.
	if n := testing.AllocsPerRun(100, func() { s.Decode(data) }); n > 4 {
		t.Errorf("a document met again allocates %v times, want at most 4", n)
	}
}
