package decisionlog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/oar-operator/oar-operator/internal/engine/codepoint"
)

// MarshalJSON writes the occurrence as encoding/json would, except that a lone
// surrogate code point in any string or member name is written as its \udXXX escape
// where encoding/json would write U+FFFD ([OAR-FACT-23]): read back as the sidecar reads
// a request, the occurrence is then the one the engine evaluated.
func (o Occurrence) MarshalJSON() ([]byte, error) {
	b := append([]byte(`{"anchor":`), codepoint.AppendJSON(nil, o.Anchor)...)
	if o.SessionID != "" {
		b = codepoint.AppendJSON(append(b, `,"session_id":`...), o.SessionID)
	}
	var err error
	if o.Facts != nil {
		if b, err = appendValue(append(b, `,"facts":`...), o.Facts); err != nil {
			return nil, err
		}
	}
	if o.RecentActivity != nil {
		b = append(b, `,"recent_activity":[`...)
		for i, step := range *o.RecentActivity {
			if i > 0 {
				b = append(b, ',')
			}
			b = codepoint.AppendJSON(b, step)
		}
		b = append(b, ']')
	}
	if tc := o.ToolCall; tc != nil {
		b = codepoint.AppendJSON(append(b, `,"tool_call":{"name":`...), tc.Name)
		args := tc.Arguments
		if args == nil {
			args = map[string]any{}
		}
		if b, err = appendValue(append(b, `,"arguments":`...), args); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	if o.Content != nil {
		b = codepoint.AppendJSON(append(b, `,"content":`...), *o.Content)
	}
	return append(b, '}'), nil
}

// appendValue writes a decoded JSON value: objects with their members sorted by name,
// as encoding/json writes maps.
func appendValue(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return codepoint.AppendJSON(b, v), nil
	case json.Number:
		if !json.Valid([]byte(v)) {
			return nil, fmt.Errorf("decisionlog: %q is not a JSON number", string(v))
		}
		return append(b, v...), nil
	case map[string]any:
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(codepoint.AppendJSON(b, k), ':')
			if b, err = appendValue(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("decisionlog: encoding a value: %w", err)
	}
	return append(b, out...), nil
}
