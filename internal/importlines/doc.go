// Package importlines holds the test that keeps the project's import lines: the engine is
// a library of its own, the sidecar links no Kubernetes client, and the reconcilers and
// the admission webhooks share the engine, the bundle and internal/resource rather than
// each other. Only the test has code.
package importlines
