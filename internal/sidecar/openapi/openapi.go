// Package openapi owns the OpenAPI 3.1 document of the engine sidecar's API
// (openapi.json): the sidecar serves it at GET /v1/openapi.json, and
// docs/sidecar-openapi.json is a byte-for-byte copy of it, so agent hosts can generate a
// client without running a sidecar. `make manifests` writes the copy; `make
// manifests-check` and this package's test fail while the two differ. The sidecar's
// tests validate its real answers against the document.
package openapi

import _ "embed"

// Document is the OpenAPI document, as committed.
//
//go:embed openapi.json
var Document []byte

// DocsPath is where the repository keeps its copy, relative to the module root.
const DocsPath = "docs/sidecar-openapi.json"
