package codepoint

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendJSONIsEncodingJSONs: without a surrogate, a string is written byte for byte as
// encoding/json writes it with HTML escaping off.
func TestAppendJSONIsEncodingJSONs(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " backslash \ slash /`, "tab\tnl\nnul\x00\x1f\x7f", "<html>&amp;",
		"naïve 日本語 🎉", "line\u2028para\u2029", "bad \xff\xfe utf8 \xed\xa0", "\xe2\x82"} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := string(AppendJSON(nil, s)); got != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q: got %s, want %s", s, got, want.String())
		}
	}
}
