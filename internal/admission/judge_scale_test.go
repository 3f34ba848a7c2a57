package admission

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scaleObjects is a set of n packs around one Capability, as `oarctl validate` once
// took the cube of n or more to judge (cmd/oarctl's scale_test.go writes the same sets
// as manifests):
//
//   - disable: each pack with its own rule, and n OperatorConfigs, config i disabling
//     pack i's rule;
//   - sameid: every pack defining one same rule, so every pack but the first conflicts.
func scaleObjects(tb testing.TB, name string, n int) []client.Object {
	const ns = "scale"
	objects := []client.Object{capabilityObject(ns, "gateway", gatewaySpec())}
	for i := range n {
		r := rule("acme.security", "READ")
		if name == "disable" {
			r = rule(fmt.Sprintf("acme.p%04d", i), "R")
		}
		objects = append(objects, rulePack(tb, ns, fmt.Sprintf("pack-%04d", i), "gateway", 0, []map[string]any{r}))
	}
	if name == "disable" {
		for i := range n {
			doc := map[string]any{"oar_config": "1.0", "disable": []any{fmt.Sprintf("acme.p%04d/R", i)}}
			objects = append(objects, operatorConfig(tb, ns, fmt.Sprintf("config-%04d", i), "gateway", doc))
		}
	}
	return objects
}

// BenchmarkJudgeScale times Judge on each set, and one assembly of the whole set (what
// each of Judge's views of a pack or configuration costs at least).
//
//	go test -run XXX -bench JudgeScale -benchmem ./internal/admission
func BenchmarkJudgeScale(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"disable", "sameid"} {
		for _, n := range []int{50, 100, 200} {
			objects := scaleObjects(b, name, n)
			b.Run(fmt.Sprintf("Judge/%s/%d", name, n), func(b *testing.B) {
				for b.Loop() {
					if _, err := Judge(ctx, objects); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("Assemble/%s/%d", name, n), func(b *testing.B) {
				set, _, err := newSet(objects)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := set.assemble(ctx, types.NamespacedName{Namespace: "scale", Name: "gateway"}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
