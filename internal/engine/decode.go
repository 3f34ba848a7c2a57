package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/oar-operator/oar-operator/internal/engine/diag"
)

// maxDecodeDepth bounds nesting so no document can exhaust the stack.
const maxDecodeDepth = 256

// DecodeJSON decodes one JSON value strictly: numbers stay exact (json.Number), a
// duplicate object key is refused, and trailing data is refused. Duplicate keys are
// not a lossless mapping ([OAR-DOC-1]): two parsers would keep different members.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > maxDecodeDepth {
		return nil, fmt.Errorf("%s: nesting deeper than %d levels", displayPath(path), maxDecodeDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, jsonError(err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("%s: object key is not a string", displayPath(path))
				}
				child := diag.JoinPath(path, key)
				if _, dup := obj[key]; dup {
					return nil, &DuplicateKeyError{Path: child}
				}
				v, err := decodeValue(dec, child, depth+1)
				if err != nil {
					return nil, err
				}
				obj[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonError(err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; dec.More(); i++ {
				v, err := decodeValue(dec, fmt.Sprintf("%s[%d]", path, i), depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonError(err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %q", t.String())
	default:
		return t, nil
	}
}

func jsonError(err error) error {
	if err == io.EOF {
		return errors.New("unexpected end of JSON input")
	}
	return err
}

func displayPath(p string) string {
	if p == "" {
		return "document"
	}
	return p
}

// DuplicateKeyError reports a member given twice in one object.
type DuplicateKeyError struct{ Path string }

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q: a document with a member given twice has no single JSON reading [OAR-DOC-1]", e.Path)
}

// DecodeDocuments reads a file holding JSON or YAML: one document, a JSON array of
// documents, or a multi-document YAML stream ([OAR-DOC-1], [OAR-DOC-31]). It returns
// the members in order. YAML is read the way kubectl reads it (YAML 1.1 through
// sigs.k8s.io/yaml), so a file gets the verdict here that it gets at admission.
func DecodeDocuments(data []byte) ([]any, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("no document found")
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		v, err := DecodeJSON(trimmed)
		if err == nil {
			return members(v), nil
		}
		var dup *DuplicateKeyError
		if errors.As(err, &dup) || !looksLikeYAMLFlow(trimmed) {
			return nil, fmt.Errorf("JSON: %w", err)
		}
	}
	docs, err := splitYAML(data)
	if err != nil {
		return nil, err
	}
	var out []any
	for i, doc := range docs {
		v, err := DecodeYAML(doc)
		if err != nil {
			if len(docs) > 1 {
				return nil, fmt.Errorf("YAML document %d: %w", i+1, err)
			}
			return nil, fmt.Errorf("YAML: %w", err)
		}
		if v == nil {
			continue
		}
		out = append(out, members(v)...)
	}
	if len(out) == 0 {
		return nil, errors.New("no document found")
	}
	return out, nil
}

// DecodeYAML converts one YAML document to JSON, refusing duplicate keys, and decodes
// it like DecodeJSON.
func DecodeYAML(doc []byte) (any, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		if strings.Contains(err.Error(), "already set in map") {
			return nil, fmt.Errorf("%v: a document with a member given twice has no single JSON reading [OAR-DOC-1]", err)
		}
		return nil, err
	}
	return DecodeJSON(js)
}

// looksLikeYAMLFlow reports whether a brace-or-bracket document that is not valid JSON
// may still be YAML flow style (unquoted keys or values).
func looksLikeYAMLFlow(b []byte) bool {
	return !json.Valid(b)
}

func members(v any) []any {
	if arr, ok := v.([]any); ok {
		return arr
	}
	return []any{v}
}

// splitYAML splits a stream on "---" separator lines, the way kubectl does, skipping
// documents that hold only whitespace and comments.
func splitYAML(data []byte) ([][]byte, error) {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if hasYAMLContent(cur.Bytes()) {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "---") {
			rest := strings.TrimSpace(line[3:])
			if rest == "" || strings.HasPrefix(rest, "#") {
				flush()
				continue
			}
		}
		if strings.TrimRight(line, " \t") == "..." {
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return docs, nil
}

func hasYAMLContent(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}
