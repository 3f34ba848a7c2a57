package openapi

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestDocsCopy holds docs/sidecar-openapi.json to the served document, byte for byte.
func TestDocsCopy(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join("..", "..", "..", DocsPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, Document) {
		t.Fatalf("%s differs from internal/sidecar/openapi/openapi.json, the document the sidecar serves: run make manifests", DocsPath)
	}
}

// TestDocumentIsOpenAPI31 validates the document against the OpenAPI 3.1 schema
// (https://spec.openapis.org/oas/3.1/schema/2022-10-07, as libopenapi embeds it), checks
// that every component schema is a valid JSON Schema 2020-12 schema, and loads it with
// libopenapi, which resolves every reference.
func TestDocumentIsOpenAPI31(t *testing.T) {
	c := jsonschema.NewCompiler()
	oas, err := jsonschema.UnmarshalJSON(strings.NewReader(datamodel.OpenAPI31SchemaData))
	if err != nil {
		t.Fatal(err)
	}
	const oasURL = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"
	if err := c.AddResource(oasURL, oas); err != nil {
		t.Fatal(err)
	}
	meta, err := c.Compile(oasURL)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Document))
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.Validate(doc); err != nil {
		t.Fatalf("not an OpenAPI 3.1 document: %v", err)
	}

	// Each component schema compiles, which validates it against the 2020-12
	// metaschema and resolves its references.
	c = jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("sidecar-openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
	for name := range schemas {
		if _, err := c.Compile("sidecar-openapi.json#/components/schemas/" + name); err != nil {
			t.Errorf("schema %s: %v", name, err)
		}
	}

	d, err := libopenapi.NewDocument(Document)
	if err != nil {
		t.Fatal(err)
	}
	if f := d.GetSpecInfo().SpecFormat; f != datamodel.OAS31 {
		t.Fatalf("libopenapi reads it as %q, want %q", f, datamodel.OAS31)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		t.Fatalf("libopenapi: %v", err)
	}
	// What a client generator needs: every operation named, and the named schemas.
	var ops []string
	for path, item := range m.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			if op.OperationId == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			ops = append(ops, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(ops)
	want := []string{"GET /v1/bundle", "GET /v1/capability", "GET /v1/events", "GET /v1/openapi.json", "POST /v1/evaluate"}
	if !slices.Equal(ops, want) {
		t.Errorf("operations %v, want %v", ops, want)
	}
	for _, name := range []string{"Occurrence", "ToolCall", "EvaluateAnswer", "Decision", "Advisory", "Transform",
		"SkippedTransform", "CounterReport", "Failure", "Event", "EventRecord", "Warning", "Problem", "Diagnostic",
		"BundleInfo", "Capability"} {
		if _, ok := m.Model.Components.Schemas.Get(name); !ok {
			t.Errorf("no component schema %s", name)
		}
	}
}
