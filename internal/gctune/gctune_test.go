package gctune

import (
	"slices"
	"testing"
)

func TestEnvAddsGOGCUnlessTheOperatorChose(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root"}
	got := Env(base)
	if !slices.Contains(got, "GOGC=400") || len(got) != 3 {
		t.Fatalf("Env(%v) = %v, want GOGC=400 added", base, got)
	}
	if len(base) != 2 {
		t.Fatalf("Env changed its argument: %v", base)
	}
	for _, own := range []string{"GOGC=off", "GOGC=100", "GOMEMLIMIT=1GiB"} {
		env := append(slices.Clone(base), own)
		if got := Env(env); !slices.Equal(got, env) {
			t.Errorf("with %s: Env = %v, want it unchanged", own, got)
		}
	}
}
