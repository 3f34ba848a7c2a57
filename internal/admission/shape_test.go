package admission

import (
	"testing"
)

// TestShapeErrors: without a capability, exactly the checks that need none report — the
// version gate, the member set, types and grammars, duplicates — and nothing that
// depends on what a capability declares.
func TestShapeErrors(t *testing.T) {
	read := rule("acme.security", "READ")
	for _, c := range []struct {
		name   string
		rules  []map[string]any
		clause string // "" when nothing is reported
		field  string
	}{
		{"a valid rule", []map[string]any{read}, "", ""},
		{"[OAR-DOC-3] an unquoted version", []map[string]any{with(read, "oar", 1)}, "OAR-DOC-3", "oar"},
		{"[OAR-DOC-4] an unsupported major version", []map[string]any{with(read, "oar", "2.0")}, "OAR-DOC-4", "oar"},
		{"[OAR-DOC-2] a missing member", []map[string]any{with(read, "effect", nil)}, "OAR-DOC-2", "effect"},
		{"[OAR-DOC-27] an unknown member", []map[string]any{with(read, "severity", "high")}, "OAR-DOC-27", "severity"},
		{"[OAR-DOC-6] a malformed id", []map[string]any{with(read, "id", "read")}, "OAR-DOC-6", "id"},
		{"[OAR-DOC-12] an empty anchor", []map[string]any{with(read, "anchor", "")}, "OAR-DOC-12", "anchor"},
		{"[OAR-DOC-9] a duplicate", []map[string]any{read, read}, "OAR-DOC-9", "id"},
		{"an unknown identifier needs a capability", []map[string]any{with(read, "when", "pth == 1")}, "", ""},
		{"an anchor outside the core needs a capability", []map[string]any{with(read, "anchor", "gateway.pre_render")}, "", ""},
		{"an unsupported profile needs a capability", []map[string]any{with(read, "requires", map[string]any{"profiles": []any{"mcp"}})}, "", ""},
		{"an override of another pack's rule needs its packs", []map[string]any{with(read, "overrides", []any{"acme.other/RULE"})}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs := make([]any, len(c.rules))
			for i, r := range c.rules {
				docs[i] = decodedDoc(t, r)
			}
			errs := shapeErrors(docs)
			if c.clause == "" {
				if len(errs) > 0 {
					t.Fatalf("want nothing, got %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Clause != c.clause || errs[0].Field != c.field {
				t.Fatalf("want one [%s] at %s, got %v", c.clause, c.field, errs)
			}
		})
	}
}
