package sched_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// TestReadmeTasteOfTheAPI runs README.md's "A taste of the API" as a
// user copies it: a Streaming kernel split over all cores, Add and Wait
// from a registered thread, then the frame-graph snippet replayed with
// re-pointed Params. It checks the results, that a replay allocates
// nothing ("a run validates nothing again, hands out no IDs"), and that
// adding and waiting a task allocates nothing ("no allocation per task").
func TestReadmeTasteOfTheAPI(t *testing.T) {
	const (
		kScale sched.KernelID = 1
		kPost  sched.KernelID = 2
	)
	var lastFrame uint32
	reg := sched.NewRegistry()
	if err := reg.Register(kScale, sched.Kernel{
		Name: "scale", Kind: sched.Streaming, Grain: 4096,
		In:  []sched.StreamSpec{{Name: "x", Stride: 4}},
		Out: []sched.StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *sched.Ctx, d *sched.TaskData) error {
			x, y := sched.View[float32](d.In[0]), sched.View[float32](d.Out[0])
			for i := d.Begin; i < d.End; i++ { // this invocation's range
				y[i] = 2 * x[i]
			}
			return nil
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(kPost, sched.Kernel{Name: "post", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		lastFrame = d.Params[0]
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	main, err := s.RegisterThread("main")
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		x := make([]float32, 100_003) // not a multiple of Grain
		y := make([]float32, len(x))
		for i := range x {
			x[i] = float32(i)
		}
		tk := sched.Task{Kernel: kScale}
		tk.Data.Elements = uint32(len(x))
		tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y)
		id, err := main.Add(&tk) // split into ranges over all cores
		if err != nil {
			t.Errorf("Add: %v", err)
			return
		}
		if err := main.Wait(id); err != nil {
			t.Errorf("Wait: %v", err)
			return
		}
		for i := range y {
			if y[i] != 2*x[i] {
				t.Errorf("y[%d] = %v, want %v", i, y[i], 2*x[i])
				return
			}
		}
		if a := testing.AllocsPerRun(50, func() {
			id, err := main.Add(&tk)
			if err == nil {
				err = main.Wait(id)
			}
			if err != nil {
				t.Errorf("Add/Wait: %v", err)
			}
		}); a != 0 {
			t.Errorf("Add and Wait of a split task allocate %.1f times, README promises no allocation per task", a)
		}

		g := s.NewGraph()
		a, err := g.Add(&tk) // the README's first node: the scale task
		if err != nil {
			t.Errorf("Graph.Add: %v", err)
			return
		}
		b, err := g.Add(&sched.Task{Kernel: kPost})
		if err != nil {
			t.Errorf("Graph.Add: %v", err)
			return
		}
		if err := g.Precede(a, b); err != nil {
			t.Errorf("Precede: %v", err)
			return
		}
		for frame := 0; frame < 5; frame++ {
			g.Params(b)[0] = uint32(frame) // re-point parameters
			if err := g.RunCtx(main); err != nil {
				t.Errorf("frame %d: RunCtx: %v", frame, err)
				return
			}
			if lastFrame != uint32(frame) {
				t.Errorf("frame %d: the post node read Params[0] = %d", frame, lastFrame)
			}
		}
		frame := uint32(5)
		if n := testing.AllocsPerRun(50, func() {
			g.Params(b)[0] = frame
			frame++
			if err := g.RunCtx(main); err != nil {
				t.Errorf("RunCtx: %v", err)
			}
		}); n != 0 {
			t.Errorf("a graph run allocates %.1f times, README promises none", n)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("README's API taste did not finish within 10 s")
	}
}

// TestRegistryHandsOutIDsAsDocumented: Register's, RegisterNext's and
// RegisterBlock's docs as a library author reads them: fixed IDs below
// FirstHandedID, handed-out ones the lowest free from FirstHandedID up
// (around an ID a program fixed there), a block all or nothing, the same
// owner's block shared, a different block under that owner refused naming
// it, and KernelGraph refused.
func TestRegistryHandsOutIDsAsDocumented(t *testing.T) {
	nop := func(c *sched.Ctx, d *sched.TaskData) error { return nil }
	k := func(name string) sched.Kernel { return sched.Kernel{Name: name, CPU: nop} }
	reg := sched.NewRegistry()
	if err := reg.Register(5, k("fixed")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(5, k("again")); err == nil || !strings.Contains(err.Error(), "fixed") || !strings.Contains(err.Error(), "again") {
		t.Errorf("Register of a taken ID: %v, want an error naming both kernels", err)
	}
	if err := reg.Register(sched.KernelGraph, k("graph")); err == nil {
		t.Error("Register took KernelGraph")
	}
	if err := reg.Register(sched.FirstHandedID+1, k("fixed-high")); err != nil {
		t.Fatalf("Register at FirstHandedID+1: %v", err)
	}
	a, err := reg.RegisterNext(k("a"))
	if err != nil || a != sched.FirstHandedID {
		t.Fatalf("first RegisterNext = %d, %v; want FirstHandedID %d", a, err, sched.FirstHandedID)
	}
	b, err := reg.RegisterNext(k("b"))
	if err != nil || b != sched.FirstHandedID+2 {
		t.Fatalf("second RegisterNext = %d, %v; want %d (the lowest free)", b, err, sched.FirstHandedID+2)
	}
	blk := []sched.Kernel{k("r0"), k("r1"), k("r2")}
	first, err := reg.RegisterBlock("render", blk)
	if err != nil || first != sched.FirstHandedID+3 {
		t.Fatalf("RegisterBlock = %d, %v; want %d", first, err, sched.FirstHandedID+3)
	}
	again, err := reg.RegisterBlock("render", blk)
	if err != nil || again != first {
		t.Errorf("the same owner's block again = %d, %v; want the same first ID %d", again, err, first)
	}
	if _, err := reg.RegisterBlock("render", []sched.Kernel{k("r0"), k("other")}); err == nil || !strings.Contains(err.Error(), "render") {
		t.Errorf("a different block under the same owner: %v, want an error naming the owner", err)
	}
	bad := []sched.Kernel{k("ok"), {Name: "no-cpu"}}
	if _, err := reg.RegisterBlock("lib", bad); err == nil {
		t.Fatal("RegisterBlock took a kernel without a CPU function")
	}
	next, err := reg.RegisterNext(k("after"))
	if err != nil || next != first+3 {
		t.Errorf("RegisterNext after a refused block = %d, %v; want %d (the refused block registered none)", next, err, first+3)
	}
}
