package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oar-operator/oar-operator/internal/engine"
)

func TestZZFresh(t *testing.T) {
	wl := os.Getenv("WL")
	if wl == "" {
		t.Skip()
	}
	var args []string
	args = append(args, "--capability", wl+"/capability.json")
	ents, _ := os.ReadDir(wl)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "pack-") {
			args = append(args, "--rules", wl+"/"+e.Name())
		}
	}
	var pf programFlags
	fl := newFlags("x", os.Stderr)
	pf.register(fl)
	fl.Parse(args)
	l := &loader{w: os.Stderr}
	p := pf.load(l)
	data, _ := os.ReadFile(wl + "/occurrences.jsonl")
	var lines [][]byte
	for _, ln := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(ln)) > 0 {
			lines = append(lines, ln)
		}
	}
	occs := l.readOccurrences(wl + "/occurrences.jsonl")
	fresh := os.Getenv("FRESH") == "1"
	buf := &engine.DecisionBuffer{}
	for pass := 0; pass < 3; pass++ {
		var lat []time.Duration
		for round := 0; round < 10; round++ {
			rt := benchRuntime()
			for i, ln := range lines {
				occ := occs[i].occ
				if fresh {
					o, _ := decodeOccurrence(ln)
					occ = o
				}
				lat = append(lat, evaluatePinned(p, rt, occ, buf))
			}
		}
		slices.Sort(lat)
		t.Logf("fresh=%v p50 %d p90 %d p99 %d", fresh, percentile(lat, .5), percentile(lat, .9), percentile(lat, .99))
	}
}
