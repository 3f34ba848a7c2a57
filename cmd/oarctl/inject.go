package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/admission"
	"github.com/oar-operator/oar-operator/internal/inject"
)

const injectSynopsis = "oarctl inject [--namespace NAMESPACE] [--operator-namespace NAMESPACE] [--image IMAGE] [--cpu-request Q] [--memory-request Q] [--memory-limit Q] [--session-store URL] [--session-store-secret SECRET] [--decision-log stdout|off] [--decision-log-content MODE] [--decision-log-sample F] [--run-as-user auto|none|UID] [FILE | -]..."

// runInject renders, offline, what the engine injector (the mutating webhook for Pods)
// stores: every pod template that opts in gets the oar-engine sidecar, through the same
// function the webhook runs. Its sidecar flags are the manager's --injector-* flags
// without the prefix (one definition, inject.Options.RegisterFlags), so given the
// cluster's values it renders what the cluster injects. Namespaces in the input opt in
// their pods as the cluster's would; the Capability's existence is not checked.
func runInject(args []string, stdout, stderr io.Writer) int {
	flags := newFlags("inject", stderr)
	o := inject.Defaults()
	namespace := flags.String("namespace", "default", "the `NAMESPACE` of manifests that name none (as kubectl's current namespace)")
	home := flags.String("operator-namespace", "oar-system", "the operator's own `NAMESPACE`, whose pods are never injected")
	o.RegisterFlags(flags, "")
	rest, code, ok := parseFlags(flags, injectSynopsis, args, stdout, stderr)
	if !ok {
		return code
	}
	if err := o.CheckFlags(""); err != nil {
		fmt.Fprintf(stderr, "oarctl inject: %v\n", err)
		return exitUsage
	}
	o.SkipNamespaces = append(o.SkipNamespaces, *home)
	if len(rest) == 0 {
		rest = []string{"-"}
	}
	var docs []map[string]any
	for _, name := range rest {
		d, err := readManifests(name)
		if err != nil {
			fmt.Fprintf(stderr, "oarctl inject: %v\n", err)
			return exitFail
		}
		docs = append(docs, d...)
	}
	warnings, err := inject.Manifests(docs, *namespace, o)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "Warning: %s\n", admission.HeaderText(w))
	}
	if err != nil {
		fmt.Fprintf(stderr, "oarctl inject: %v\n", err)
		return exitFail
	}
	var out bytes.Buffer
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			fmt.Fprintf(stderr, "oarctl inject: %v\n", err)
			return exitFail
		}
		out.WriteString("---\n")
		out.Write(y)
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintf(stderr, "oarctl inject: %v\n", err)
		return exitFail
	}
	return exitOK
}

// readManifests reads the YAML or JSON documents of a file ("-": standard input).
func readManifests(name string) ([]map[string]any, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		r = f
	} else {
		name = "standard input"
	}
	var docs []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for i := 1; ; i++ {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}
