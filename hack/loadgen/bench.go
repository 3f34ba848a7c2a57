package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
)

// benchDocs are the documents of `oarctl bench`: a capability, rules, and recorded
// occurrences.
type benchDocs struct {
	capability  map[string]any
	rules       []any
	occurrences []map[string]any
}

func readBench(dir string) (*benchDocs, error) {
	read := func(name string) ([]any, error) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		docs, err := engine.DecodeDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return docs, nil
	}
	caps, err := read("capability.yaml")
	if err != nil {
		return nil, err
	}
	capDoc, ok := caps[0].(map[string]any)
	if !ok {
		return nil, errors.New("capability.yaml: not a capability document")
	}
	rules, err := read("rules.yaml")
	if err != nil {
		return nil, err
	}
	d := &benchDocs{capability: capDoc, rules: rules}
	data, err := os.ReadFile(filepath.Join(dir, "occurrences.jsonl"))
	if err != nil {
		return nil, err
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		v, err := engine.DecodeJSON(line)
		occ, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, fmt.Errorf("occurrences.jsonl:%d: not an occurrence object: %v", i+1, err)
		}
		d.occurrences = append(d.occurrences, occ)
	}
	if len(d.occurrences) == 0 {
		return nil, errors.New("occurrences.jsonl holds no occurrence")
	}
	return d, nil
}

// bundle seals a bundle of n rules: the bench rules, copied under namespaces of their
// own (bench.copy1, bench.copy2, ...) until there are n. A bare reference inside a copy
// resolves to the copy's own rule, so every copy loads as the original does.
func (d *benchDocs) bundle(n int) (*bundle.Bundle, error) {
	rules := make([]any, 0, n)
	for c := 0; len(rules) < n; c++ {
		for _, r := range d.rules {
			if len(rules) == n {
				break
			}
			m, ok := r.(map[string]any)
			if !ok {
				return nil, errors.New("rules.yaml: a rule is not an object")
			}
			if c > 0 {
				m = maps.Clone(m)
				m["namespace"] = fmt.Sprintf("bench.copy%d", c)
			}
			rules = append(rules, m)
		}
	}
	b := &bundle.Bundle{Capability: d.capability, Packs: []bundle.Pack{{Name: "bench", Generation: 1, Rules: rules}}, Configs: []bundle.Config{}}
	if err := b.Seal(); err != nil {
		return nil, err
	}
	if _, err := bundle.Load(b); err != nil {
		return nil, fmt.Errorf("the %d-rule bench bundle does not load: %w", n, err)
	}
	return b, nil
}

// requests renders the recorded occurrences as request bodies, each under every one of
// the given number of session ids.
func (d *benchDocs) requests(sessions int) ([][]byte, error) {
	var out [][]byte
	for s := range sessions {
		for _, o := range d.occurrences {
			body, err := d.request(o, fmt.Sprintf("load-%d", s))
			if err != nil {
				return nil, err
			}
			out = append(out, body)
		}
	}
	return out, nil
}

func (d *benchDocs) request(o map[string]any, session string) ([]byte, error) {
	m := maps.Clone(o)
	m["session_id"] = session
	return json.Marshal(m)
}
