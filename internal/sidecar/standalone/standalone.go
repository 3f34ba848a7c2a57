// Package standalone serves plain OAR documents without a bundle directory: a capability
// file, rule files or directories, and configuration files, as `oar-engine --capability
// --rules --config` names them. It is how a developer
// runs the engine on a laptop, how hosts outside Kubernetes use it, and how tests start
// engines. The files are assembled into a bundle (one pack per rule file, one
// configuration per configuration document, in the order given) and installed in a
// reload.Source, so a reload that fails is refused exactly as a bad bundle is and the
// previous documents keep serving.
package standalone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oar-operator/oar-operator/internal/bundle"
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/sidecar/reload"
)

// Files names the documents a standalone engine serves.
type Files struct {
	// Capability is the capability document's file (section 8.2).
	Capability string
	// Rules are rule files, or directories whose .yaml, .yml and .json files (not
	// recursing) are rule files, in the order given.
	Rules []string
	// Configs are configuration files (section 9), applied in the order given
	// ([OAR-CFG-7]).
	Configs []string
}

// ruleExtensions are the files a rules directory contributes.
var ruleExtensions = []string{".yaml", ".yml", ".json"}

// expand lists the files the documents are read from: the capability, every rule file
// (directories expanded, sorted by name) and every configuration file.
func (f Files) expand() (capability string, rules, configs []string, err error) {
	for _, r := range f.Rules {
		fi, err := os.Stat(r)
		if err != nil {
			return "", nil, nil, fmt.Errorf("--rules: %w", err)
		}
		if !fi.IsDir() {
			rules = append(rules, r)
			continue
		}
		entries, err := os.ReadDir(r)
		if err != nil {
			return "", nil, nil, fmt.Errorf("--rules: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() && slices.Contains(ruleExtensions, strings.ToLower(filepath.Ext(e.Name()))) {
				rules = append(rules, filepath.Join(r, e.Name()))
			}
		}
	}
	return f.Capability, rules, f.Configs, nil
}

// Read assembles the documents into a sealed bundle.
func (f Files) Read() (*bundle.Bundle, error) {
	capPath, rules, configs, err := f.expand()
	if err != nil {
		return nil, err
	}
	capDocs, err := readDocs(capPath)
	if err != nil {
		return nil, err
	}
	if len(capDocs) != 1 {
		return nil, fmt.Errorf("%s: %d documents; a capability file holds exactly one capability document", capPath, len(capDocs))
	}
	capDoc, ok := capDocs[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: the capability document is not a JSON object", capPath)
	}
	b := &bundle.Bundle{Capability: capDoc, Packs: []bundle.Pack{}, Configs: []bundle.Config{}}
	for _, path := range rules {
		docs, err := readDocs(path)
		if err != nil {
			return nil, err
		}
		b.Packs = append(b.Packs, bundle.Pack{Name: path, Rules: docs})
	}
	for _, path := range configs {
		docs, err := readDocs(path)
		if err != nil {
			return nil, err
		}
		for i, d := range docs {
			doc, ok := d.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: document %d is not a JSON object", path, i+1)
			}
			name := path
			if len(docs) > 1 {
				name = fmt.Sprintf("%s#%d", path, i+1)
			}
			b.Configs = append(b.Configs, bundle.Config{Name: name, Order: int64(len(b.Configs)), Document: doc})
		}
	}
	if err := b.Seal(); err != nil {
		return nil, err
	}
	return b, nil
}

func readDocs(path string) ([]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := engine.DecodeDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return docs, nil
}

// Watcher polls the files and installs the documents in Source whenever one of them
// (or a rules directory's listing) changes. It polls for the reasons reload.Watcher
// does; a state of the files is tried once, so a refused edit is not retried until the
// files change again.
type Watcher struct {
	Files    Files
	Interval time.Duration
	Source   *reload.Source

	last  string
	tried bool
}

// Run polls until ctx ends, starting at once.
func (w *Watcher) Run(ctx context.Context) {
	reload.PollEvery(ctx, w.Interval, func() { w.Poll() })
}

// Poll reads the files once when they changed since the last poll and installs what
// they hold. It returns whether new documents were swapped in.
func (w *Watcher) Poll() bool {
	fp := w.fingerprint()
	if w.tried && fp == w.last {
		return false
	}
	w.last, w.tried = fp, true
	b, err := w.Files.Read()
	if err != nil {
		w.Source.Refuse(fmt.Errorf("reading the documents: %w", err))
		return false
	}
	if cur := w.Source.Current(); cur != nil && cur.Digest() == b.Digest {
		// A broken edit reverted: the last failure no longer describes the files.
		w.Source.Remounted()
		return false
	}
	_, err = w.Source.Install(b)
	return err == nil
}

// fingerprint describes every file by name, size and modification time, and the
// listing of each rules directory.
func (w *Watcher) fingerprint() string {
	var sb strings.Builder
	capPath, rules, configs, err := w.Files.expand()
	if err != nil {
		return "error: " + err.Error()
	}
	for _, p := range slices.Concat([]string{capPath}, rules, configs) {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&sb, "%s: %v\n", p, err)
			continue
		}
		fmt.Fprintf(&sb, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return sb.String()
}
