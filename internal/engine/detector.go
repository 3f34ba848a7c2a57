package engine

import "errors"

// Detector produces observations for a kind: detector rule ([OAR-OPS-11]): scores,
// spans and entity lists, never a verdict.
type Detector interface {
	Detect(occ *Occurrence) (Findings, error)
}

// Findings are what a detector reports. The facts stay local to the rule that invoked
// the detector ([OAR-FACT-11]).
type Findings struct {
	// Facts maps fact names to values, checked against the declared types like any
	// provider value ([OAR-FACT-26]).
	Facts map[string]any
	// NoFindings gives every detector-profile fact its zero value for the rule.
	NoFindings bool
}

// reports says whether the findings give a value of the named fact.
func (f *Findings) reports(name string) bool {
	_, ok := f.Facts[name]
	return ok
}

// DetectorFunc adapts a function to Detector.
type DetectorFunc func(occ *Occurrence) (Findings, error)

// Detect implements Detector.
func (f DetectorFunc) Detect(occ *Occurrence) (Findings, error) { return f(occ) }

// The three detectors reserved for the conformance corpus ([OAR-CONF-25]).
const (
	DetectorNoop    = "detector://noop"
	DetectorError   = "detector://error"
	DetectorFixture = "detector://fixture"
)

// ErrDetectorFailed is what detector://error always reports.
var ErrDetectorFailed = errors.New("detector://error always fails")

// ReservedDetectors returns the corpus detectors: noop reports no findings, error always
// fails, and fixture reports the occurrence's DetectorFacts when it carries them and
// otherwise leaves the supplied facts in place.
func ReservedDetectors() map[string]Detector {
	return map[string]Detector{
		DetectorNoop: DetectorFunc(func(*Occurrence) (Findings, error) {
			return Findings{NoFindings: true}, nil
		}),
		DetectorError: DetectorFunc(func(*Occurrence) (Findings, error) {
			return Findings{}, ErrDetectorFailed
		}),
		DetectorFixture: DetectorFunc(func(occ *Occurrence) (Findings, error) {
			return Findings{Facts: occ.DetectorFacts}, nil
		}),
	}
}
