package main

import (
	"github.com/oar-operator/oar-operator/internal/engine"
	"github.com/oar-operator/oar-operator/internal/engine/diag"
	"github.com/oar-operator/oar-operator/internal/occurrence"
)

// decodeOccurrence reads one occurrence the way a fixture writes its single occurrence
// (section 10.2), without the capability and configuration that oarctl takes from
// files. oarctl accepts every fixture member, detector_facts included: it runs the
// reserved corpus detectors, so detector://fixture has something to report.
func decodeOccurrence(data []byte) (*engine.Occurrence, diag.List) {
	return occurrence.Decode(data, occurrence.FixtureMembers)
}
