package anim_test

import (
	"testing"

	"github.com/vkjobs/vkjobs/anim"
)

// TestLocalToModelAllocatesNothing: LocalToModel's doc says it
// allocates nothing (its errors aside) and writes nothing when an
// argument is bad.
func TestLocalToModelAllocatesNothing(t *testing.T) {
	parents := []int32{-1, 0, 1, 1}
	const inst = 3
	local := make([]float32, inst*len(parents)*12)
	for i := range local {
		local[i] = float32(i%12) / 12 // any finite values: only allocations are checked
	}
	model := make([]float32, inst*len(parents)*16)
	if a := testing.AllocsPerRun(100, func() {
		if err := anim.LocalToModel(parents, local, model, 0, inst); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("LocalToModel allocates %.1f times", a)
	}
	for i := range model {
		model[i] = 42
	}
	if err := anim.LocalToModel([]int32{-1, 2, 0}, local, model, 0, 1); err == nil {
		t.Fatal("LocalToModel took a parent after its child")
	}
	for i, v := range model {
		if v != 42 {
			t.Fatalf("LocalToModel wrote model[%d] = %v on a bad argument", i, v)
		}
	}
}
