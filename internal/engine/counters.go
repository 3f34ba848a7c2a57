package engine

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// Counters is the counters member of a decision ([OAR-CONF-33]): every counter the
// occurrence changed with its counts after it, sorted by report key in byte order, each
// key once. An evaluation gathers the few changed counters and sorts them in place, in
// storage its DecisionBuffer keeps, so neither the engine nor an encoder writing the
// object in encoding/json's key order hashes or sorts a key per evaluation, as a map
// made them do. It marshals and unmarshals as the map[string]Counts it stands for.
type Counters []ReportedCounter

// ReportedCounter is one counter of the report: its report key (CounterKey.ReportKey)
// and its counts.
type ReportedCounter struct {
	Key    string
	Counts Counts
}

// CountersOf is the report holding the counters of m; nil for a nil map.
func CountersOf(m map[string]Counts) Counters {
	if m == nil {
		return nil
	}
	c := make(Counters, 0, len(m))
	for k, v := range m {
		c = append(c, ReportedCounter{Key: k, Counts: v})
	}
	slices.SortFunc(c, func(a, b ReportedCounter) int { return strings.Compare(a.Key, b.Key) })
	return c
}

// Get returns the counts reported under key; zero counts when c has none, as a map
// would.
func (c Counters) Get(key string) Counts {
	if i, ok := slices.BinarySearchFunc(c, key, func(r ReportedCounter, key string) int {
		return strings.Compare(r.Key, key)
	}); ok {
		return c[i].Counts
	}
	return Counts{}
}

// Map is c as a map; nil for a nil c.
func (c Counters) Map() map[string]Counts {
	if c == nil {
		return nil
	}
	m := make(map[string]Counts, len(c))
	for _, r := range c {
		m[r.Key] = r.Counts
	}
	return m
}

// MarshalJSON writes c as encoding/json writes the map[string]Counts of its counters:
// null when nil, else an object in key order. Like Copy's, it leaves '<', '>' and '&'
// to the calling encoder, which escapes them when its HTML escaping is on.
func (c Counters) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	n := 2
	for _, r := range c {
		n += len(r.Key) + 80
	}
	return c.AppendObject(make([]byte, 0, n), codepoint.AppendEncodingJSON), nil
}

// AppendObject appends c as a JSON object, in its order, each key written by str (as
// Copy.AppendObject's names) and its counts as Counts marshals them.
func (c Counters) AppendObject(b []byte, str func([]byte, string) []byte) []byte {
	b = append(b, '{')
	for i, r := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = str(b, r.Key)
		b = append(b, `:{"fire_count":`...)
		b = strconv.AppendInt(b, r.Counts.Fire, 10)
		b = append(b, `,"breaker_count":`...)
		b = strconv.AppendInt(b, r.Counts.Breaker, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// UnmarshalJSON reads what a map[string]Counts reads, into c's counters: null makes c
// nil, an object adds its counters to c's, a key given twice taking the last counts.
func (c *Counters) UnmarshalJSON(data []byte) error {
	m := c.Map()
	err := json.Unmarshal(data, &m)
	*c = CountersOf(m)
	return err
}

// sortCounters puts a report's counters in key order. An occurrence changes few, so
// they are sorted by insertion, without the calls of a general sort; a long report
// (every rule of a large set counting) is sorted by slices.SortFunc.
func sortCounters(c Counters) {
	if len(c) > 12 {
		slices.SortFunc(c, func(a, b ReportedCounter) int { return strings.Compare(a.Key, b.Key) })
		return
	}
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j].Key < c[j-1].Key; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}
