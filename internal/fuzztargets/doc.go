// Package fuzztargets holds the test that keeps the Makefile's FUZZ_TARGETS equal to
// the fuzz targets the module's tests define, so `make fuzz-smoke` (in `make test`)
// and `make fuzz` run every one of them. Only the test has code.
package fuzztargets
