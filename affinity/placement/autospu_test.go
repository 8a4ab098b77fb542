package placement

import (
	"bytes"
	"testing"

	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// TestAutoSPU: with the SPU executor as a candidate, Auto tasks explore
// and learn both devices, every tracked placement completes, and a task
// that does not fit the local store is never sent there.
func TestAutoSPU(t *testing.T) {
	reg := sched.NewRegistry()
	must(t, kernels.Register(reg)) // no SPU bindings: instanced skinning misfits
	x, err := spu.New(spu.Options{})
	must(t, err)
	p := New(Options{SPU: x, TrackEvery: 1, ExploreBudget: -1}) // 40 tasks: explore fully
	s, err := sched.New(sched.Config{Kernels: reg, Placer: p, Observer: p})
	must(t, err)
	defer s.Close()
	must(t, s.AttachExecutor(sched.ExecSPU, x))
	p.Attach(s)
	m, err := s.RegisterThread("main")
	must(t, err)
	r := rng(4)
	for i := range 40 {
		task, out := saxpyTask(r, 1000<<(i%6))
		want := reference(t, reg, task)
		task.Affinity = sched.Auto
		must(t, runTask(t, m, task))
		if !bytes.Equal(sched.StreamOf(out).Bytes, want) {
			t.Fatalf("task %d: wrong result", i)
		}
	}
	for range 5 {
		task, _ := instancedSkinTask(r, 64, 1024, 90) // 368640-byte palette
		task.Affinity = sched.Auto
		must(t, runTask(t, m, task))
	}
	snap := p.Snapshot()
	km, _ := snap.Model(kernels.Saxpy)
	for _, dev := range []string{"cpu", "spu"} {
		if d, ok := km.Device(dev); !ok || d.Samples == 0 {
			t.Fatalf("no %s samples: %+v", dev, km)
		}
	}
	if skin, ok := snap.Model(kernels.SkinLBS); ok {
		if _, ok := skin.Device("spu"); ok {
			t.Fatal("a skinning task that misfits the local store was placed on the SPU")
		}
	}
	for _, d := range snap.Decisions {
		if !d.Done || d.Failed {
			t.Fatalf("decision not completed: %+v", d)
		}
	}
	if snap.Outstanding["cpu"] != 0 || snap.Outstanding["spu"] != 0 || x.Stats().Failed != 0 {
		t.Fatalf("outstanding %v, SPU failures %d", snap.Outstanding, x.Stats().Failed)
	}
	// Fits allocates nothing.
	task, _ := saxpyTask(r, 1000)
	k := reg.Lookup(kernels.Saxpy)
	if a := testing.AllocsPerRun(100, func() { x.Fits(k, &task.Data) }); a != 0 {
		t.Fatalf("Fits: %v allocations", a)
	}
}

func runTask(t testing.TB, m *sched.Ctx, task sched.Task) error {
	t.Helper()
	id, err := m.Add(&task)
	must(t, err)
	return m.Wait(id)
}

type observerFunc func(*sched.RunEvent)

func (f observerFunc) TaskRan(ev *sched.RunEvent) { f(ev) }
