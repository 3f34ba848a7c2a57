package engine

import (
	"errors"
	"strings"
	"testing"
)

// TestUsesSession: an anchor uses session state exactly when one of its enforced rules
// reads or writes a counter, carries flow, or substitutes a rule whose copy reads one;
// tool.pre_invoke also whenever the capability advertises an activity window, since its
// admitted calls feed the window ([OAR-PROF-9]) that a later bundle's flow rules read.
func TestUsesSession(t *testing.T) {
	const base = `{"oar":"1.0","namespace":"t","kind":"policy","effect":"warn","requires":{"profiles":["tool"]}`
	tests := []struct {
		name, rules string
		want        map[string]bool
	}{
		{"no state", base + `,"id":"A","anchor":"tool.pre_invoke","on_fire":["publish_event"]}`,
			map[string]bool{"gw.pre_call": true, "model.output": false}},
		{"counter action", base + `,"id":"A","anchor":"model.output","on_fire":["increment_breaker"]}`,
			map[string]bool{"gw.pre_call": true, "model.output": true}},
		{"counter read in when", base + `,"id":"A","anchor":"model.output","when":"fire_count_of(\"t/A\") >= 2"}`,
			map[string]bool{"model.output": true}},
		{"counter read in copy", base + `,"id":"A","anchor":"model.output","copy":{"what":"{{breaker_count}} times"}}`,
			map[string]bool{"model.output": true}},
		{"flow", base + `,"id":"A","anchor":"model.output","flow":["read"]}`,
			map[string]bool{"model.output": true, "gw.pre_call": true}},
		{"substitute reading counters", base + `,"id":"A","anchor":"model.output","when":"tool_arg_int(\"n\") > 1","on_error":"t/B"}
---
` + base + `,"id":"B","anchor":"gw.render","copy":{"what":"{{fire_count}}"}}`,
			map[string]bool{"model.output": true, "gw.render": true}},
		{"disabled rule", base + `,"id":"A","anchor":"model.output","on_fire":["increment_counter"]}`,
			map[string]bool{"model.output": false}},
	}
	for _, tt := range tests {
		var cfg []string
		if tt.name == "disabled rule" {
			cfg = []string{`{"oar_config":"1.0","disable":["t/A"]}`}
		}
		p := mustProgram(t, tt.rules, cfg...)
		for anchor, want := range tt.want {
			if got := p.UsesSession(anchor); got != want {
				t.Errorf("%s: UsesSession(%q) = %v, want %v", tt.name, anchor, got, want)
			}
		}
	}
}

// TestUsesSessionWithoutWindow: a host that tracks no recent activity (activity_window
// 0) keeps no window, so a tool call whose rules need no state uses none.
func TestUsesSessionWithoutWindow(t *testing.T) {
	noWindow := strings.Replace(testCapability, `"activity_window":3`, `"activity_window":0`, 1)
	rs, errs := LoadRules(mustCap(t, noWindow), mustDocs(t, `{"oar":"1.0","namespace":"t","id":"A","kind":"policy","effect":"warn","requires":{"profiles":["tool"]},"anchor":"tool.pre_invoke","on_fire":["publish_event"]}`))
	if len(errs) > 0 {
		t.Fatalf("rules: %v", errs)
	}
	p, errs := Configure(rs, nil)
	if len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	if p.UsesSession("gw.pre_call") {
		t.Error("UsesSession(gw.pre_call) = true with activity_window 0 and no rule needing state")
	}
}

type unreadableWindow struct{ MemoryActivity }

func (*unreadableWindow) WindowErr(string) ([]string, error) {
	return nil, errors.New("store unreachable")
}

// TestOPS3_UnreadableWindowGoesToOnError: a flow rule whose window cannot be read is
// one that cannot be evaluated; its on_error decides, and a rule without flow decides
// as usual.
func TestOPS3_UnreadableWindowGoesToOnError(t *testing.T) {
	p := mustProgram(t, `{"oar":"1.0","namespace":"t","id":"FLOW","kind":"policy","anchor":"model.output","flow":["read"],"effect":"warn","on_error":"fail_open"}
---
{"oar":"1.0","namespace":"t","id":"PLAIN","kind":"policy","anchor":"model.output","effect":"nudge"}`)
	rt := NewMemoryRuntime()
	rt.Activity = &unreadableWindow{}
	d := p.Evaluate(rt, &Occurrence{Anchor: "model.output", SessionID: "s"})
	if d.Decision != "nudge" || len(d.Failures) != 1 || d.Failures[0].Rule != "t/FLOW" || d.Failures[0].Clause != "OAR-OPS-3" ||
		!strings.Contains(d.Failures[0].Error, "store unreachable") {
		t.Errorf("decision %+v", d)
	}
}
