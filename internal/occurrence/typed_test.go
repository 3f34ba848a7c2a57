package occurrence

import (
	"reflect"
	"regexp"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
)

// general is Decode without its typed path.
func general(data []byte, m Members) (*engine.Occurrence, bool) {
	v, err := engine.DecodeJSON(data)
	if err != nil {
		return nil, false
	}
	occ, errs := parse(v, m)
	return occ, errs == nil
}

// typedCases are read by decodeTyped (typed) or left to the general path.
var typedCases = []struct {
	in    string
	typed bool
}{
	{`{"anchor":"tool.pre_invoke","session_id":"s1","tool_call":{"name":"read","arguments":{"path":"/x","n":2}}}`, true},
	{` {"anchor":"a","facts":{"x":[1,{"y":null}]},"recent_activity":["s","t"],"content":"c\n\u00e9","tool_call":{"name":"n"}} `, true},
	{`{"anchor":"a","recent_activity":[],"tool_call":{"arguments":{},"name":"n"}}`, true},
	{`{"anch\u006fr":"a"}`, true},
	{`{"anchor":"a","detector_facts":{}}`, false},
	{`{"anchor":"a","anchor":"b"}`, false},
	{`{"anchor":"a","anch\u006fr":"b"}`, false},
	{`{"anchor":""}`, false},
	{`{"anchor":1}`, false},
	{`{"session_id":"s"}`, false},
	{`{"anchor":"a","other":1}`, false},
	{`{"anchor":"a","facts":[]}`, false},
	{`{"anchor":"a","facts":{"x":1,"x":2}}`, false},
	{`{"anchor":"a","recent_activity":["s",1]}`, false},
	{`{"anchor":"a","recent_activity":"s"}`, false},
	{`{"anchor":"a","content":null}`, false},
	{`{"anchor":"a","tool_call":{}}`, false},
	{`{"anchor":"a","tool_call":{"name":""}}`, false},
	{`{"anchor":"a","tool_call":{"name":"n","name":"m"}}`, false},
	{`{"anchor":"a","tool_call":{"name":"n","arguments":[]}}`, false},
	{`{"anchor":"a","tool_call":{"name":"n","other":1}}`, false},
	{`{"anchor":"a","tool_call":"n"}`, false},
	{`{"anchor":"a"} {}`, false},
	{`{"anchor":"a",}`, false},
	{`["anchor"]`, false},
	{"{\"anchor\":\"\xff\"}", false},
}

func TestTypedAgreesWithParse(t *testing.T) {
	for _, c := range typedCases {
		_, ok := decodeTyped([]byte(c.in), HostMembers)
		if ok != c.typed {
			t.Errorf("%s: decodeTyped ok = %v, want %v", c.in, ok, c.typed)
		}
		for _, m := range []Members{HostMembers, FixtureMembers} {
			typedAgrees(t, []byte(c.in), m)
		}
	}
}

// typedAgrees: decodeTyped never accepts what the general path refuses, nor reads it
// differently.
func typedAgrees(t *testing.T, data []byte, m Members) {
	t.Helper()
	got, ok := decodeTyped(data, m)
	if !ok {
		return
	}
	want, wantOK := general(data, m)
	if !wantOK || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decodeTyped = %+v; the general path = %+v (accepted %v)", data, got, want, wantOK)
	}
}

// FuzzDecode: the typed path agrees with the general one on every input, and Decode
// answers every input with an occurrence or with diagnostics that each name a clause: a
// body the sidecar refuses tells its caller why in the same fields (diag.Error's) as
// every other refusal.
func FuzzDecode(f *testing.F) {
	for _, c := range typedCases {
		f.Add([]byte(c.in), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, fixture bool) {
		m := HostMembers
		if fixture {
			m = FixtureMembers
		}
		typedAgrees(t, data, m)
		occ, errs := Decode(data, m)
		if (occ == nil) == (len(errs) == 0) {
			t.Fatalf("%q: occurrence %+v with %d diagnostics", data, occ, len(errs))
		}
		for _, e := range errs {
			if !clauseID.MatchString(e.Clause) {
				t.Fatalf("%q: a diagnostic without a clause: %s", data, e.Format(""))
			}
		}
	})
}

// clauseID is the form of a clause identifier a diagnostic carries.
var clauseID = regexp.MustCompile(`^OAR-[A-Z]+-[0-9]+$`)

// TestToolCallDecodedWithItsOccurrence: an occurrence and its tool call are one
// allocation; a tool call without arguments adds only its empty arguments map.
func TestToolCallDecodedWithItsOccurrence(t *testing.T) {
	allocs := func(in string) float64 {
		return testing.AllocsPerRun(100, func() {
			if _, errs := Decode([]byte(in), HostMembers); errs != nil {
				t.Fatal(errs)
			}
		})
	}
	bare, call := allocs(`{"anchor":"a"}`), allocs(`{"anchor":"a","tool_call":{"name":"n"}}`)
	if call > bare+1 {
		t.Errorf("a tool call took %.0f allocations more than none, want at most 1 (its arguments map)", call-bare)
	}
}
