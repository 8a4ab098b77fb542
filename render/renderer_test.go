package render

import (
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestRenderersShareKernelBlock: Renderers created at once on one
// scheduler, after another library took an ID from the same registry, get
// one block of IDs that the registry handed out, holding the renderer's
// kernels; the other library's kernel is untouched.
func TestRenderersShareKernelBlock(t *testing.T) {
	reg := sched.NewRegistry()
	other, err := reg.RegisterNext(sched.Kernel{Name: "other", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	must(t, err)
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	must(t, err)
	defer s.Close()
	rs := make([]*Renderer, 8)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() {
			r, err := New(s, Config{})
			if err != nil {
				t.Error(err)
			}
			rs[i] = r
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, r := range rs {
		if r.k != rs[0].k {
			t.Fatalf("Renderer %d has kernels %v, Renderer 0 %v", i, r.k, rs[0].k)
		}
	}
	for i, id := range rs[0].k {
		if id == other || id < sched.FirstHandedID {
			t.Fatalf("kernel %d got ID %d: the other library's, or not handed out", i, id)
		}
		if k := reg.Lookup(id); k == nil || k.Name != kernelNames[i] {
			t.Fatalf("Lookup(%d) = %v, want %q", id, k, kernelNames[i])
		}
	}
	if k := reg.Lookup(other); k == nil || k.Name != "other" {
		t.Fatalf("the other library's kernel is now %v", k)
	}
}
