package engine

import (
	"slices"
	"testing"
)

// A window handed out by MemoryActivity keeps its steps while later appends slide the
// session's window forward, and each window holds the last max steps, oldest first.
func TestMemoryActivityWindowsNeverChange(t *testing.T) {
	a := NewMemoryActivity()
	var handed [][]string
	var want [][]string
	steps := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10"}
	for i, step := range steps {
		a.Append("x", step, 3)
		w := a.Window("x")
		exp := steps[max(0, i-2) : i+1]
		if !slices.Equal(w, exp) {
			t.Fatalf("after %s the window is %v, want %v", step, w, exp)
		}
		handed = append(handed, w)
		want = append(want, slices.Clone(w))
	}
	for i := range handed {
		if !slices.Equal(handed[i], want[i]) {
			t.Errorf("window %d changed to %v, was %v", i, handed[i], want[i])
		}
	}
	if w := a.Window("y"); len(w) != 0 {
		t.Errorf("an unknown session has window %v", w)
	}
}
