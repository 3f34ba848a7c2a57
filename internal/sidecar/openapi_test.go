package sidecar

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/oar-operator/oar-operator/internal/engine/fixture"
	"github.com/oar-operator/oar-operator/internal/sidecar/openapi"
)

// apiSpec is the sidecar's OpenAPI document (package openapi) with a JSON Schema
// 2020-12 compiler over it, the dialect of OpenAPI 3.1's schemas: check validates an
// answer against what the document says of its operation and status.
type apiSpec struct {
	doc      any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema
}

const specURL = "sidecar-openapi.json"

var loadedSpec = sync.OnceValues(func() (*apiSpec, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openapi.Document))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(specURL, doc); err != nil {
		return nil, err
	}
	return &apiSpec{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}, nil
})

func spec(t testing.TB) *apiSpec {
	t.Helper()
	s, err := loadedSpec()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pointerEscape escapes one JSON pointer token (RFC 6901).
func pointerEscape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// at returns the object at a JSON pointer of the document, following it when it is a
// reference (as a response or header object may be), with the pointer it ends at.
func (s *apiSpec) at(ptr string) (map[string]any, string, error) {
	v := s.doc
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("%s: not in the document", ptr)
		}
		if v, ok = obj[tok]; !ok {
			return nil, "", fmt.Errorf("%s: not in the document", ptr)
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf("%s: not an object", ptr)
	}
	if ref, isRef := obj["$ref"].(string); isRef {
		target, found := strings.CutPrefix(ref, "#")
		if !found {
			return nil, "", fmt.Errorf("%s: reference %q is not within the document", ptr, ref)
		}
		return s.at(target)
	}
	return obj, ptr, nil
}

// schema compiles the schema at a JSON pointer of the document, once.
func (s *apiSpec) schema(ptr string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[ptr]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(specURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	s.schemas[ptr] = sch
	return sch, nil
}

// validate validates a JSON text against the schema at ptr.
func (s *apiSpec) validate(ptr string, body []byte) error {
	sch, err := s.schema(ptr)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return sch.Validate(v)
}

// response finds the response object the document gives for an answer: the operation's
// response for the status; for a method the path does not serve, the 405 of the
// operation it does serve; for a path not in the document, components.responses.NotFound.
func (s *apiSpec) response(method, path string, status int) (string, error) {
	item, itemPtr, err := s.at("/paths/" + pointerEscape(path))
	if err != nil {
		if status != http.StatusNotFound {
			return "", fmt.Errorf("%s %s: status %d for a path the document does not list, want 404", method, path, status)
		}
		return "/components/responses/NotFound", nil
	}
	opPtr := itemPtr + "/" + strings.ToLower(method)
	if _, ok := item[strings.ToLower(method)]; !ok {
		if status != http.StatusMethodNotAllowed {
			return "", fmt.Errorf("%s %s: status %d for a method the document does not list, want 405", method, path, status)
		}
		served := slices.Collect(maps.Keys(item))
		if len(served) != 1 {
			return "", fmt.Errorf("%s lists %d operations", path, len(served))
		}
		opPtr = itemPtr + "/" + served[0]
	}
	respPtr := opPtr + "/responses/" + strconv.Itoa(status)
	if _, ptr, err := s.at(respPtr); err == nil {
		return ptr, nil
	}
	return "", fmt.Errorf("%s %s: status %d is not documented", method, path, status)
}

// check validates an answer to method path: its status is documented, every header
// the response documents is present when required and valid against its schema, the
// Content-Type is one the response documents, and the body is valid against that media
// type's schema (a text/event-stream body is read by checkEventStream instead).
func (s *apiSpec) check(method, path string, r response) error {
	respPtr, err := s.response(method, path, r.status)
	if err != nil {
		return err
	}
	resp, _, err := s.at(respPtr)
	if err != nil {
		return err
	}
	var errs []error
	headers, _ := resp["headers"].(map[string]any)
	for name := range headers {
		h, hPtr, err := s.at(respPtr + "/headers/" + pointerEscape(name))
		if err != nil {
			return err
		}
		values := r.header.Values(name)
		if len(values) == 0 {
			if h["required"] == true {
				errs = append(errs, fmt.Errorf("header %s is required and missing", name))
			}
			continue
		}
		if len(values) > 1 {
			errs = append(errs, fmt.Errorf("header %s given %d times", name, len(values)))
		}
		value, err := json.Marshal(values[0])
		if err != nil {
			return err
		}
		if err := s.validate(hPtr+"/schema", value); err != nil {
			errs = append(errs, fmt.Errorf("header %s: %w", name, err))
		}
	}
	mediaType, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("Content-Type %q: %w", r.header.Get("Content-Type"), err))...)
	}
	content, _ := resp["content"].(map[string]any)
	if _, ok := content[mediaType]; !ok {
		return errors.Join(append(errs, fmt.Errorf("Content-Type %s is not documented for status %d (%s)", mediaType, r.status, slices.Sorted(maps.Keys(content))))...)
	}
	if mediaType != "text/event-stream" {
		if err := s.validate(respPtr+"/content/"+pointerEscape(mediaType)+"/schema", r.body); err != nil {
			errs = append(errs, fmt.Errorf("body %s: %w", truncate(r.body), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s %s answered %d: %w", method, path, r.status, errors.Join(errs...))
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// mustConform fails the test when an answer does not conform to the document.
func (ts *testSidecar) mustConform(t testing.TB, method, path, body string, status int) response {
	t.Helper()
	r := ts.do(t, method, path, body)
	if r.status != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if err := spec(t).check(method, path, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// occurrenceSchema is where the document keeps the schema of POST /v1/evaluate's body.
const occurrenceSchema = "/paths/~1v1~1evaluate/post/requestBody/content/application~1json/schema"

// checkEventStream validates the events of a text/event-stream body against the schema
// the document names for each event's data by its event name (x-oar-event-data; an
// event without a name is a "message"), and returns how many it validated.
func (s *apiSpec) checkEventStream(stream string) (int, error) {
	media, _, err := s.at("/paths/~1v1~1events/get/responses/200/content/text~1event-stream")
	if err != nil {
		return 0, err
	}
	schemas, _ := media["x-oar-event-data"].(map[string]any)
	n := 0
	for _, event := range strings.Split(stream, "\n\n") {
		name, data, hasData := "message", "", false
		for _, line := range strings.Split(event, "\n") {
			switch {
			case line == "" || strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && !hasData:
				data, hasData = strings.TrimPrefix(line, "data: "), true
			default:
				return n, fmt.Errorf("line %q of event %q is not one the document describes", line, event)
			}
		}
		if !hasData {
			continue
		}
		ref, ok := schemas[name].(string)
		if !ok {
			return n, fmt.Errorf("the document names no schema for the data of an event %q", name)
		}
		if err := s.validate(strings.TrimPrefix(ref, "#"), []byte(data)); err != nil {
			return n, fmt.Errorf("event %q: %w", name, err)
		}
		n++
	}
	return n, nil
}

// TestCorpusAnswersConformToOpenAPI posts every occurrence of the conformance corpus
// that a sidecar can serve (as TestConformanceOverHTTP does) and validates each answer,
// and each fixture's GET /v1/bundle and /v1/capability, against the OpenAPI document.
// The occurrences a host may not send (detector_facts) are posted too: their 400s
// must conform as well, and the Occurrence schema must refuse exactly the requests the
// sidecar refuses. It then checks the corpus reached every member of a decision,
// so that no part of the schema goes unvalidated.
func TestCorpusAnswersConformToOpenAPI(t *testing.T) {
	s := spec(t)
	var answers, refusals int
	seen := map[string]bool{}
	for _, path := range corpusFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fixture.Parse(data, strings.TrimSuffix(filepath.Base(path), ".json"))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if f.Expected.Error != nil || httpSkip(f) == "capability names a detector the sidecar does not provide" {
			continue
		}
		ts := serve(t, fixtureBundle(t, f), Options{})
		for i, o := range f.Occurrences {
			body := requestBody(f, o.Occurrence)
			r := ts.do(t, http.MethodPost, "/v1/evaluate", string(body))
			if err := s.check(http.MethodPost, "/v1/evaluate", r); err != nil {
				t.Fatalf("%s occurrence %d: %v", f.ID, i, err)
			}
			// The request schema agrees with the sidecar on what it accepts.
			if err := s.validate(occurrenceSchema, body); (err == nil) != (r.status == http.StatusOK) {
				t.Fatalf("%s occurrence %d: answered %d, and the Occurrence schema says %v of %s", f.ID, i, r.status, err, body)
			}
			if r.status != http.StatusOK {
				refusals++
				continue
			}
			answers++
			var a map[string]any
			r.decode(t, &a)
			for k, v := range a {
				if k == "decision" {
					k += "=" + v.(string)
				}
				if l, isList := v.([]any); !isList || len(l) > 0 {
					seen[k] = true
				}
			}
		}
		for _, get := range []string{"/v1/bundle", "/v1/capability"} {
			if err := s.check(http.MethodGet, get, ts.do(t, http.MethodGet, get, "")); err != nil {
				t.Fatalf("%s: %v", f.ID, err)
			}
		}
	}
	t.Logf("%d answers and %d refusals of corpus occurrences conform", answers, refusals)
	if answers < 500 || refusals == 0 {
		t.Errorf("%d answers and %d refusals: the corpus did not run", answers, refusals)
	}
	for _, member := range []string{"decision=none", "decision=warn", "decision=nudge", "decision=transform",
		"decision=block", "code", "rule", "copy", "advisories", "transforms", "content", "applied", "on_fire", "events",
		"skipped_transforms", "counters", "failures", "warnings", "bundle"} {
		if !seen[member] {
			t.Errorf("no corpus answer has %s", member)
		}
	}
}

// TestErrorAnswersConformToOpenAPI validates every error the sidecar answers with,
// and its answers before the first bundle and after a refused one.
func TestErrorAnswersConformToOpenAPI(t *testing.T) {
	ts := serve(t, sealed(t, testCapability, testRules), Options{MaxBodyBytes: 2048})
	const evaluate = "/v1/evaluate"
	for _, tt := range []struct {
		name, body string
		// schema: whether the Occurrence schema can say it is malformed; JSON Schema
		// sees neither a member given twice nor a length in bytes.
		schema bool
	}{
		{"not JSON", `{"anchor": `, true},
		{"not an object", `["tool.pre_invoke"]`, true},
		{"no anchor", `{"session_id": "s"}`, true},
		{"empty anchor", `{"anchor": ""}`, true},
		{"unknown member", occ("tool.pre_invoke", "s", `"fact": {}`), true},
		{"unknown tool_call member", occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell", "args": {}}`), true},
		{"detector facts", occ("tool.pre_invoke", "s", `"detector_facts": {"score": 1}`), true},
		{"wrong types", occ("tool.pre_invoke", "s", `"tool_call": {"name": 1}, "recent_activity": [1]`), true},
		{"facts not an object", occ("tool.pre_invoke", "s", `"facts": []`), true},
		{"duplicate member", `{"anchor": "tool.pre_invoke", "anchor": "x"}`, false},
		{"long session", occ("tool.pre_invoke", strings.Repeat("s", MaxSessionIDBytes+1), ""), false},
		{"more problems than are listed", occ("tool.pre_invoke", "s", `"recent_activity": [`+strings.Repeat("1,", 149)+`1]`), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts.mustConform(t, http.MethodPost, evaluate, tt.body, http.StatusBadRequest)
			if err := spec(t).validate(occurrenceSchema, []byte(tt.body)); tt.schema && err == nil {
				t.Errorf("the Occurrence schema accepts %s", tt.body)
			}
		})
	}
	ts.mustConform(t, http.MethodPost, evaluate, occ("tool.pre_invoke", "s", `"content": "`+strings.Repeat("x", 3000)+`"`), http.StatusRequestEntityTooLarge)
	ts.mustConform(t, http.MethodPost, evaluate, occ("gateway.unknown", "s", ""), http.StatusOK)
	for _, path := range []string{"/v1/bundle", "/v1/capability", "/v1/events", "/v1/openapi.json"} {
		ts.mustConform(t, http.MethodPost, path, "{}", http.StatusMethodNotAllowed)
		ts.mustConform(t, http.MethodDelete, path, "", http.StatusMethodNotAllowed)
	}
	ts.mustConform(t, http.MethodGet, evaluate, "", http.StatusMethodNotAllowed)
	ts.mustConform(t, http.MethodPut, evaluate, "", http.StatusMethodNotAllowed)
	ts.mustConform(t, http.MethodGet, "/v2/evaluate", "", http.StatusNotFound)
	ts.mustConform(t, http.MethodPost, "/v1/evaluate/x", "{}", http.StatusNotFound)

	// A refused bundle: GET /v1/bundle carries its diagnostics, then their supersession.
	if _, err := ts.Source().Install(sealed(t, testCapability, `{oar: "1.0", namespace: acme.ops, id: BROKEN, kind: policy, anchor: tool.pre_invoke, when: "pth == 1", effect: warn}`)); err == nil {
		t.Fatal("a bundle with an unknown identifier loaded")
	}
	r := ts.mustConform(t, http.MethodGet, "/v1/bundle", "", http.StatusOK)
	if !bytes.Contains(r.body, []byte(`"stage":`)) {
		t.Fatalf("no diagnostics of the refused bundle: %s", r.body)
	}
	if _, err := ts.Source().Install(sealed(t, testCapability, testRules)); err != nil {
		t.Fatal(err)
	}
	if r := ts.mustConform(t, http.MethodGet, "/v1/bundle", "", http.StatusOK); !bytes.Contains(r.body, []byte(`"superseded_by":`)) {
		t.Fatalf("the failure is not superseded: %s", r.body)
	}

	// Before the first bundle.
	idle := serve(t, nil, Options{})
	idle.Source().Refuse(errors.New("bundle: neither bundle.json nor bundle.json.gz is present"))
	idle.mustConform(t, http.MethodPost, evaluate, occ("tool.pre_invoke", "s", ""), http.StatusServiceUnavailable)
	idle.mustConform(t, http.MethodGet, "/v1/capability", "", http.StatusServiceUnavailable)
	idle.mustConform(t, http.MethodGet, "/v1/bundle", "", http.StatusOK)

	// A failure the engine should never have (here an event writer that panics) is a 500.
	broken := serve(t, sealed(t, testCapability, testRules), Options{Events: panickingWriter{}})
	broken.mustConform(t, http.MethodPost, evaluate, occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`), http.StatusInternalServerError)

	// A sidecar shutting down refuses new event streams.
	ts.Sidecar.events.Close()
	ts.mustConform(t, http.MethodGet, "/v1/events", "", http.StatusServiceUnavailable)
}

type panickingWriter struct{}

func (panickingWriter) Write([]byte) (int, error) { panic(errors.New("the event writer broke")) }

// TestServedDocument: GET /v1/openapi.json is the committed document, byte for byte.
func TestServedDocument(t *testing.T) {
	ts := serve(t, nil, Options{})
	r := ts.mustConform(t, http.MethodGet, "/v1/openapi.json", "", http.StatusOK)
	if !bytes.Equal(r.body, openapi.Document) {
		t.Fatal("GET /v1/openapi.json is not the document of package openapi")
	}
}

// TestEventStreamConformsToOpenAPI validates an event stream's answer and a record it
// carries against the document (TestSlowSubscriberIsDropped validates a dropped
// subscriber's last event).
func TestEventStreamConformsToOpenAPI(t *testing.T) {
	s := spec(t)
	ts := serve(t, sealed(t, testCapability, testRules), Options{})
	resp, err := ts.srv.Client().Get(ts.srv.URL + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := s.check(http.MethodGet, "/v1/events", response{status: resp.StatusCode, header: resp.Header}); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(resp.Body)
	ts.evaluate(t, occ("tool.pre_invoke", "sse", `"tool_call": {"name": "shell"}`))
	var stream strings.Builder
	for !strings.Contains(stream.String(), "data: ") || !strings.HasSuffix(stream.String(), "\n\n") {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		stream.WriteString(line)
	}
	if n, err := s.checkEventStream(stream.String()); err != nil || n != 1 {
		t.Fatalf("%d events of %q conform: %v", n, stream.String(), err)
	}
}

// TestOpenAPISchemasAreStrict proves check can fail: real answers changed by a member
// the sidecar does not write, a member of the wrong type, a missing required member or
// header, or an undocumented status, are each refused, naming what is wrong.
func TestOpenAPISchemasAreStrict(t *testing.T) {
	s := spec(t)
	ts := serve(t, sealed(t, testCapability, testRules), Options{})
	answer := ts.mustConform(t, http.MethodPost, "/v1/evaluate", occ("tool.pre_invoke", "s", `"tool_call": {"name": "shell"}`), http.StatusOK)
	problem := ts.mustConform(t, http.MethodPost, "/v1/evaluate", occ("tool.pre_invoke", "s", `"fact": 1`), http.StatusBadRequest)
	info := ts.mustConform(t, http.MethodGet, "/v1/bundle", "", http.StatusOK)
	capability := ts.mustConform(t, http.MethodGet, "/v1/capability", "", http.StatusOK)
	edit := func(r response, from, to string) response {
		if !bytes.Contains(r.body, []byte(from)) {
			t.Fatalf("%q is not in %s", from, r.body)
		}
		r.body = bytes.Replace(r.body, []byte(from), []byte(to), 1)
		return r
	}
	withHeader := func(r response, name, value string) response {
		r.header = r.header.Clone()
		if value == "" {
			r.header.Del(name)
		} else {
			r.header.Set(name, value)
		}
		return r
	}
	for _, tt := range []struct {
		name, want, method, path string
		r                        response
	}{
		{"an extra member of the answer", `'/verdict'`, http.MethodPost, "/v1/evaluate", edit(answer, `{"decision"`, `{"verdict":"block","decision"`)},
		{"an extra member of an advisory", `'severity' not allowed`, http.MethodPost, "/v1/evaluate", edit(answer, `"advisories":[{"code"`, `"advisories":[{"severity":1,"code"`)},
		{"an extra member of an event", `'/events/0/time'`, http.MethodPost, "/v1/evaluate", edit(answer, `"session_id":"s"`, `"session_id":"s","time":"now"`)},
		{"an extra member of a counter", `'limit' not allowed`, http.MethodPost, "/v1/evaluate", edit(answer, `"breaker_count":0`, `"breaker_count":0,"limit":3`)},
		{"a decision of the wrong type", `'/decision': got number`, http.MethodPost, "/v1/evaluate", edit(answer, `"decision":"warn"`, `"decision":1`)},
		{"a decision out of the vocabulary", `'/decision': value must be one of`, http.MethodPost, "/v1/evaluate", edit(answer, `"decision":"warn"`, `"decision":"deny"`)},
		{"allow as a decision ([OAR-EVAL-7]: an allow rule contributes none)", `'/decision': value must be one of`, http.MethodPost, "/v1/evaluate", edit(answer, `"decision":"warn"`, `"decision":"allow"`)},
		{"a trace entry without an outcome", `'/applied/0'`, http.MethodPost, "/v1/evaluate", edit(answer, `:fired"`, `"`)},
		{"a list that is null", `'/transforms': got null`, http.MethodPost, "/v1/evaluate", edit(answer, `"transforms":[]`, `"transforms":null`)},
		{"a missing required member", `missing property 'on_fire'`, http.MethodPost, "/v1/evaluate", edit(answer, `"on_fire":["increment_counter","publish_event"],`, ``)},
		{"a missing digest header", `X-OAR-Bundle-Digest is required and missing`, http.MethodPost, "/v1/evaluate", withHeader(answer, DigestHeader, "")},
		{"a malformed digest header", `'md5:abc' does not match`, http.MethodPost, "/v1/evaluate", withHeader(answer, DigestHeader, "md5:abc")},
		{"another Content-Type", `Content-Type text/plain is not documented`, http.MethodPost, "/v1/evaluate", withHeader(answer, "Content-Type", "text/plain")},
		{"an undocumented status", `status 418 is not documented`, http.MethodPost, "/v1/evaluate", response{status: http.StatusTeapot, header: answer.header, body: answer.body}},
		{"an extra member of a problem", `'status' not allowed`, http.MethodPost, "/v1/evaluate", edit(problem, `{"error"`, `{"status":400,"error"`)},
		{"an extra member of a diagnostic", `'/diagnostics/0/hint'`, http.MethodPost, "/v1/evaluate", edit(problem, `"clause":"OAR-CONF-18"`, `"clause":"OAR-CONF-18","hint":""`)},
		{"an index of the wrong type", `'/diagnostics/0/index': got string`, http.MethodPost, "/v1/evaluate", edit(problem, `"index":-1`, `"index":"-1"`)},
		{"an extra member of the bundle info", `'healthy' not allowed`, http.MethodGet, "/v1/bundle", edit(info, `{"ready"`, `{"healthy":true,"ready"`)},
		{"an extra member of a pack", `'digest' not allowed`, http.MethodGet, "/v1/bundle", edit(info, `"generation":1`, `"generation":1,"digest":""`)},
		{"a rule count of the wrong type", `'/rule_count': got string`, http.MethodGet, "/v1/bundle", edit(info, `"rule_count":4`, `"rule_count":"4"`)},
		{"an extra member of the capability", `'window' not allowed`, http.MethodGet, "/v1/capability", edit(capability, `{"activity_window"`, `{"window":4,"activity_window"`)},
		{"a 405 without Allow", `header Allow is required and missing`, http.MethodGet, "/v1/evaluate", withHeader(ts.do(t, http.MethodGet, "/v1/evaluate", ""), "Allow", "")},
		{"a 404 for a documented path", `status 404 is not documented`, http.MethodGet, "/v1/bundle", ts.do(t, http.MethodGet, "/nowhere", "")},
	} {
		if err := s.check(tt.method, tt.path, tt.r); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: want an error naming %s, got %v", tt.name, tt.want, err)
		}
	}
	digest := "sha256:" + strings.Repeat("0", 64)
	for _, tt := range []struct{ name, stream, want string }{
		{"a record with an extra member", `data: {"time":"2026-12-01T00:00:00Z","bundle":"` + digest + `","rule":"a/B","anchor":"x","effect":"warn","extra":1}`, "'/extra'"},
		{"a record whose time is not a date-time", `data: {"time":"yesterday","bundle":"` + digest + `","rule":"a/B","anchor":"x","effect":"warn"}`, "'/time'"},
		{"a dropped event that is not a Problem", `event: dropped` + "\n" + `data: {"reason":"slow"}`, "'reason' not allowed"},
		{"an event the document does not name", `event: reloaded` + "\n" + `data: {}`, `no schema for the data of an event "reloaded"`},
	} {
		if _, err := s.checkEventStream(": subscribed\n\n" + tt.stream + "\n\n"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: want an error naming %s, got %v", tt.name, tt.want, err)
		}
	}
}
