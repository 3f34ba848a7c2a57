package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestZZProf: WL=/tmp/wl/100 ANCHOR=tool.pre_invoke N=passes
func TestZZProf(t *testing.T) {
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
	occs := l.readOccurrences(wl + "/occurrences.jsonl")
	anchor := os.Getenv("ANCHOR")
	passes, _ := strconv.Atoi(os.Getenv("N"))
	if passes == 0 {
		passes = 20
	}
	var sel []recorded
	for _, o := range occs {
		if anchor == "" || o.occ.Anchor == anchor {
			sel = append(sel, o)
		}
	}
	res := measure(p, sel, passes*len(sel), measureOptions{}, benchRuntime)
	t.Logf("%d evals: p50 %d p99 %d allocs %.2f cpu %d", res.Evaluations, res.P50, res.P99, res.AllocsPerEval, res.CPUPerEval)
}
