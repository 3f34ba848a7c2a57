package redisstore

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/heapuse"
)

// TestCacheBytesCoverTheHeap: filled to its byte bound with states shaped as a Load
// makes them, in the shapes that cost the heap the most per byte charged, the cache
// takes at most twice its bound of heap, fragmentation included (measured: up to 1.6
// times, for 1 KiB session ids with a long counter key, each state evicted at random
// among short-lived strings of the key's size). Only the byte bound binds; each shape
// reaches it.
func TestCacheBytesCoverTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("fills several caches of 16 MiB")
	}
	heapuse.SkipUnderRace(t)
	const budget = 16 << 20
	version := func(i int) string { return fmt.Sprintf("%016x-%08d", i, i) }
	counters := func(keys ...string) map[string]engine.Counts {
		m := make(map[string]engine.Counts, len(keys))
		for _, k := range keys {
			m[k] = engine.Counts{Fire: 1}
		}
		return m
	}
	window := func(steps ...string) []string {
		w, err := decodeWindow(encodeWindow(steps))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	shapes := []struct {
		name string
		// state is session i's id and state.
		state func(i int) (string, *state)
	}{
		{"short ids, one unscoped counter", func(i int) (string, *state) {
			return fmt.Sprint(i), &state{version: version(i), counters: counters("cacme/R")}
		}},
		{"1 KiB ids, one counter with a 335-byte scope", func(i int) (string, *state) {
			scope := strings.Repeat("x", 327) + fmt.Sprintf("%08d", i)
			return fmt.Sprintf("%01024d", i), &state{version: version(i), counters: counters("sacme/R\x00" + scope)}
		}},
		{"500 counters a session, scoped by a fingerprint", func(i int) (string, *state) {
			keys := make([]string, 500)
			for j := range keys {
				keys[j] = fmt.Sprintf("sacme/R\x00%064x", i*1000+j)
			}
			return fmt.Sprint(i), &state{version: version(i), counters: counters(keys...)}
		}},
		{"a window of 700 one-byte steps", func(i int) (string, *state) {
			steps := make([]string, 700)
			for j := range steps {
				steps[j] = string(rune('a' + j%26))
			}
			return fmt.Sprint(i), &state{version: version(i), window: window(steps...)}
		}},
		{"a window of 16 tool names, 1 KiB ids", func(i int) (string, *state) {
			steps := make([]string, 16)
			for j := range steps {
				steps[j] = fmt.Sprintf("tool_%d", j%7)
			}
			return fmt.Sprintf("%01024d", i), &state{version: version(i), window: window(steps...)}
		}},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			before := heapuse.InUse()
			c := newSessionCache(1<<30, budget)
			full := 0
			for i := 0; full == 0 || i < 2*full; i++ {
				c.put(shape.state(i))
				if full == 0 && c.len() <= i {
					full = i
				}
			}
			grew := heapuse.InUse() - before
			t.Logf("%d sessions charged %.1f MiB, heap grew %.1f MiB", c.len(), float64(c.bytes)/(1<<20), float64(grew)/(1<<20))
			if c.bytes > budget || c.bytes < budget*9/10 {
				t.Errorf("states charged %d bytes, want the bound %d reached and kept", c.bytes, budget)
			}
			if grew > 2*budget {
				t.Errorf("the heap grew %d bytes for states bounded at %d: more than twice", grew, budget)
			}
			runtime.KeepAlive(c)
		})
	}
}
