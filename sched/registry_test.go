package sched

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeBinding is a GPU binding of a type no package of the project knows:
// the scheduler takes any GPUBinding and only asks it to check the streams.
type fakeBinding struct{ err error }

func (f *fakeBinding) CheckStreams(in, out []StreamSpec) error { return f.err }

func TestRegisterChecksGPUBinding(t *testing.T) {
	noCPU := func(*Ctx, *TaskData) error { return nil }
	r := NewRegistry()
	k := Kernel{Name: "fake", Kind: Streaming, In: []StreamSpec{{Name: "x", Stride: 4}}, CPU: noCPU, GPU: &fakeBinding{}}
	if err := r.Register(1, k); err != nil {
		t.Fatalf("Register with a matching binding: %v", err)
	}
	bad := errors.New("stride mismatch")
	k.GPU = &fakeBinding{err: bad}
	if err := r.Register(2, k); !errors.Is(err, bad) {
		t.Fatalf("Register with a mismatched binding: err = %v, want it to wrap %v", err, bad)
	}
	if r.Lookup(2) != nil {
		t.Fatal("a refused kernel was registered")
	}
}

// library is a user of a registry in TestLibrariesNeverCollide: it
// registers its kernels and returns the IDs it got, by kernel name.
type library func(t *testing.T, r *Registry) map[string]KernelID

// TestLibrariesNeverCollide: libraries sharing one registry, one with
// fixed IDs (as package kernels), one that takes an ID per kernel
// (RegisterNext, as package anim), one that takes a block (RegisterBlock,
// as package render) and a program's explicit ID in the handed-out range,
// register in every order: none is refused, no ID is given twice, and
// each kernel is found under the ID its library got.
func TestLibrariesNeverCollide(t *testing.T) {
	f := func(*Ctx, *TaskData) error { return nil }
	fixed := func(t *testing.T, r *Registry) map[string]KernelID {
		got := map[string]KernelID{}
		for i, name := range []string{"fixed.a", "fixed.b", "fixed.c"} {
			id := KernelID(1 + i)
			must(t, r.Register(id, Kernel{Name: name, CPU: f}))
			got[name] = id
		}
		return got
	}
	next := func(t *testing.T, r *Registry) map[string]KernelID {
		got := map[string]KernelID{}
		for _, name := range []string{"next.a", "next.b"} {
			id, err := r.RegisterNext(Kernel{Name: name, CPU: f})
			must(t, err)
			got[name] = id
		}
		return got
	}
	block := func(t *testing.T, r *Registry) map[string]KernelID {
		names := []string{"block.a", "block.b", "block.c", "block.d"}
		ks := make([]Kernel, len(names))
		for i, n := range names {
			ks[i] = Kernel{Name: n, CPU: f}
		}
		first, err := r.RegisterBlock("block", ks)
		must(t, err)
		got := map[string]KernelID{}
		for i, n := range names {
			got[n] = first + KernelID(i)
		}
		return got
	}
	// A program's own fixed ID above FirstHandedID: the registry must
	// skip it. It registers first or not at all here: registered after
	// the others, it may meet a handed-out ID, which Register refuses
	// (TestRegisterRefusesTakenID).
	explicit := func(t *testing.T, r *Registry) map[string]KernelID {
		must(t, r.Register(FirstHandedID+1, Kernel{Name: "explicit", CPU: f}))
		return map[string]KernelID{"explicit": FirstHandedID + 1}
	}
	libs := map[string]library{"fixed": fixed, "next": next, "block": block}
	orders := [][]string{
		{"fixed", "next", "block"}, {"fixed", "block", "next"},
		{"next", "fixed", "block"}, {"next", "block", "fixed"},
		{"block", "fixed", "next"}, {"block", "next", "fixed"},
	}
	for _, withExplicit := range []bool{false, true} {
		for _, order := range orders {
			r := NewRegistry()
			all := map[string]KernelID{}
			if withExplicit {
				maps.Copy(all, explicit(t, r))
			}
			for _, name := range order {
				for k, id := range libs[name](t, r) {
					all[k] = id
				}
			}
			owner := map[KernelID]string{}
			for name, id := range all {
				if o, dup := owner[id]; dup {
					t.Fatalf("order %v (explicit %v): ID %d given to %q and %q", order, withExplicit, id, o, name)
				}
				owner[id] = name
				if k := r.Lookup(id); k == nil || k.Name != name {
					t.Fatalf("order %v (explicit %v): Lookup(%d) = %v, want %q", order, withExplicit, id, k, name)
				}
				if strings.HasPrefix(name, "next.") || strings.HasPrefix(name, "block.") {
					if id < FirstHandedID || id == KernelGraph {
						t.Fatalf("order %v: %q got ID %d, outside the handed-out range", order, name, id)
					}
				}
			}
		}
	}
}

// TestRegisterRefusesTakenID: an explicit Register of an ID that is taken,
// fixed or handed out, fails naming both kernels and changes nothing.
func TestRegisterRefusesTakenID(t *testing.T) {
	f := func(*Ctx, *TaskData) error { return nil }
	r := NewRegistry()
	must(t, r.Register(5, Kernel{Name: "first", CPU: f}))
	handed, err := r.RegisterNext(Kernel{Name: "handed", CPU: f})
	must(t, err)
	for _, id := range []KernelID{5, handed} {
		err := r.Register(id, Kernel{Name: "second", CPU: f})
		if err == nil {
			t.Fatalf("Register(%d) of a taken ID succeeded", id)
		}
		owner := r.Lookup(id).Name
		if !strings.Contains(err.Error(), `"second"`) || !strings.Contains(err.Error(), strconv.Quote(owner)) {
			t.Errorf("Register(%d): %v: want both kernels named (%q and %q)", id, err, "second", owner)
		}
	}
	if r.Lookup(5).Name != "first" || r.Lookup(handed).Name != "handed" {
		t.Fatal("a refused Register replaced a kernel")
	}
}

// TestRegisterNext: each call hands out a new ID from FirstHandedID up,
// skipping taken ones; what Register refuses it refuses; the frame graphs'
// kernel stays registered; concurrent calls never get the same ID.
func TestRegisterNext(t *testing.T) {
	f := func(*Ctx, *TaskData) error { return nil }
	reg := NewRegistry()
	must(t, reg.Register(FirstHandedID, Kernel{Name: "taken", CPU: f}))
	seen := map[KernelID]bool{}
	for range 3 {
		id, err := reg.RegisterNext(Kernel{Name: "n", CPU: f})
		must(t, err)
		if id <= FirstHandedID || seen[id] {
			t.Fatalf("RegisterNext = %d: taken, or below the handed-out range", id)
		}
		seen[id] = true
	}
	if _, err := reg.RegisterNext(Kernel{Name: "nocpu"}); err == nil || !strings.Contains(err.Error(), "no CPU") {
		t.Fatalf("RegisterNext of a kernel without a CPU function: %v", err)
	}
	if k := reg.Lookup(KernelGraph); k == nil || k.Name != "sched.graph" {
		t.Fatalf("Lookup(KernelGraph) = %v", k)
	}
	var wg sync.WaitGroup
	ids := make([]KernelID, 64)
	for i := range ids {
		wg.Go(func() {
			id, err := reg.RegisterNext(Kernel{Name: "c", CPU: f})
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("concurrent RegisterNext gave ID %d twice", id)
		}
		seen[id] = true
	}
}

// TestRegisterBlock: a block is consecutive and all or nothing; a second
// call of its owner returns it again and registers nothing, unless it
// names other kernels; a block larger than what is left is refused, and
// the last free IDs can be handed out to the end of the space.
func TestRegisterBlock(t *testing.T) {
	f := func(*Ctx, *TaskData) error { return nil }
	ks := func(names ...string) []Kernel {
		out := make([]Kernel, len(names))
		for i, n := range names {
			out[i] = Kernel{Name: n, CPU: f}
		}
		return out
	}
	r := NewRegistry()
	// A taken ID two above the start: the block of three must go past it.
	must(t, r.Register(FirstHandedID+2, Kernel{Name: "in the way", CPU: f}))
	first, err := r.RegisterBlock("lib", ks("a", "b", "c"))
	must(t, err)
	if first != FirstHandedID+3 {
		t.Fatalf("block of 3 past a taken ID at %d starts at %d", FirstHandedID+2, first)
	}
	again, err := r.RegisterBlock("lib", ks("a", "b", "c"))
	if err != nil || again != first {
		t.Fatalf("second RegisterBlock of the owner = %d, %v; want %d", again, err, first)
	}
	if id, _ := r.RegisterNext(Kernel{Name: "n", CPU: f}); id != FirstHandedID {
		t.Fatalf("RegisterNext after the block = %d, want the free %d", id, FirstHandedID)
	}
	for _, c := range []struct {
		owner string
		ks    []Kernel
		want  string
	}{
		{"lib", ks("a", "x", "c"), `"x"`},
		{"lib", ks("a", "b"), "2 kernels"},
		{"", ks("a"), "no owner"},
		{"empty", nil, "no kernels"},
		{"halfbad", append(ks("ok"), Kernel{Name: "nocpu"}), "no CPU"},
	} {
		before := len(*r.table.Load())
		_, err := r.RegisterBlock(c.owner, c.ks)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RegisterBlock(%q, %d kernels) = %v, want an error with %s", c.owner, len(c.ks), err, c.want)
		}
		if len(*r.table.Load()) != before {
			t.Errorf("refused RegisterBlock(%q) registered kernels", c.owner)
		}
	}
	if _, err := r.RegisterBlock("halfbad", ks("ok")); err != nil {
		t.Fatalf("an owner whose block was refused cannot register: %v", err)
	}

	// The end of the space: all handed-out IDs in one block, then none.
	r = NewRegistry()
	all := make([]Kernel, int(KernelGraph-FirstHandedID))
	for i := range all {
		all[i] = Kernel{Name: "k", CPU: f}
	}
	if _, err := r.RegisterBlock("too big", append(all, all[0])); err == nil || !strings.Contains(err.Error(), "no run") {
		t.Fatalf("a block larger than the handed-out range: %v", err)
	}
	if first, err := r.RegisterBlock("all", all); err != nil || first != FirstHandedID {
		t.Fatalf("a block of every handed-out ID = %d, %v", first, err)
	}
	if _, err := r.RegisterNext(Kernel{Name: "one more", CPU: f}); err == nil || !strings.Contains(err.Error(), "one more") {
		t.Fatalf("RegisterNext with no ID left: %v", err)
	}
	if k := r.Lookup(KernelGraph); k == nil || k.Name != "sched.graph" {
		t.Fatalf("Lookup(KernelGraph) after the space filled = %v", k)
	}
}
