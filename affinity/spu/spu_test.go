package spu

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// spuSched is a scheduler with an SPU executor and a main thread.
func spuSched(t testing.TB, reg *sched.Registry, opts Options, obs sched.Observer) (*Executor, *sched.Ctx) {
	t.Helper()
	x, err := New(opts)
	must(t, err)
	s, err := sched.New(sched.Config{Kernels: reg, Observer: obs})
	if err != nil {
		x.Close()
		t.Fatal(err)
	}
	must(t, s.AttachExecutor(sched.ExecSPU, x))
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return x, m
}

func runTask(t testing.TB, m *sched.Ctx, task sched.Task) error {
	t.Helper()
	id, err := m.Add(&task)
	must(t, err)
	return m.Wait(id)
}

// TestSPUMatchesCPU: saxpy, skinning, a reduction and an expansion give
// the plain CPU kernel's bytes, with the default local store, a small one
// (many chunks) and one so small that a skinning chunk only fits once
// (single-buffered).
func TestSPUMatchesCPU(t *testing.T) {
	reg := kernelRegistry(t)
	r := rng(1)
	sax, saxOut := saxpyTask(r, 100_003)
	skin, skinOut := skinTask(r, 50_000, 8, 90) // palette 46080 bytes
	sum := sched.Task{Kernel: kernels.SumF32}
	sumIn := randFloats(r, 256*333)
	sumOut := make([]float32, 333)
	sum.Data.Elements = 333
	sum.Data.In[0], sum.Data.Out[0] = sched.StreamOf(sumIn), sched.StreamOf(sumOut)
	lerp := sched.Task{Kernel: kernels.ExpandLerp}
	segs := make([]kernels.Segment, 5000)
	for i := range segs {
		segs[i] = kernels.Segment{A: float32(i), B: float32(2 * i)}
	}
	lerpOut := make([]float32, 8*len(segs))
	lerp.Data.Elements = uint32(len(segs))
	lerp.Data.In[0], lerp.Data.Out[0] = sched.StreamOf(segs), sched.StreamOf(lerpOut)

	cases := []struct {
		name string
		task sched.Task
		out  []byte
		in   uint64 // bytes the DMA must copy in
	}{
		{"saxpy", sax, sched.StreamOf(saxOut).Bytes, 8 * 100_003},
		{"skin", skin, sched.StreamOf(skinOut).Bytes, 46080 + 48*50_000},
		{"sum", sum, sched.StreamOf(sumOut).Bytes, 4 * 256 * 333},
		{"lerp", lerp, sched.StreamOf(lerpOut).Bytes, 8 * 5000},
	}
	for _, ls := range []int{DefaultLocalStore, 64 << 10, 46080 + 200} {
		x, m := spuSched(t, reg, Options{LocalStore: ls}, nil)
		for _, c := range cases {
			if ls == 46080+200 && c.name != "skin" {
				continue
			}
			want := reference(t, reg, c.task)
			clear(c.out)
			before := x.Stats()
			task := c.task
			task.Affinity = sched.SPU
			if err := runTask(t, m, task); err != nil {
				t.Fatalf("%s, local store %d: %v", c.name, ls, err)
			}
			if !bytes.Equal(c.out, want) {
				t.Fatalf("%s, local store %d: SPU output differs from the CPU kernel's", c.name, ls)
			}
			st := x.Stats()
			if in, out := st.BytesIn-before.BytesIn, st.BytesOut-before.BytesOut; in != c.in || out != uint64(len(c.out)) {
				t.Fatalf("%s: DMA moved %d bytes in and %d out, want %d and %d", c.name, in, out, c.in, len(c.out))
			}
			chunks := st.Chunks - before.Chunks
			if minChunks := (c.in + uint64(len(c.out))) / uint64(ls); chunks < minChunks || chunks == 0 {
				t.Fatalf("%s: %d chunks through a %d-byte local store", c.name, chunks, ls)
			}
		}
		st := x.Stats()
		t.Logf("local store %6d: %+v", ls, st)
		if ls == 46080+200 && st.SingleBuffered == 0 {
			t.Fatal("the tiny local store did not fall back to single buffering")
		}
		if ls == DefaultLocalStore && st.SingleBuffered != 0 {
			t.Fatal("single-buffered with 256 KiB")
		}
	}
}

// TestSPUMisfit: a task whose Whole streams cannot fit gets an error
// naming the kernel and the sizes.
func TestSPUMisfit(t *testing.T) {
	reg := sched.NewRegistry()
	must(t, kernels.Register(reg)) // no SPU bindings: streams as declared
	_, m := spuSched(t, reg, Options{}, nil)
	// The crowd's instanced skinning: a 4096-vertex mesh (196608 bytes)
	// and 256 palettes of 90 bones (1474560 bytes), both Whole.
	task, _ := instancedSkinTask(rng(2), 256, 4096, 90)
	task.Affinity = sched.SPU
	err := runTask(t, m, task)
	if !errors.Is(err, ErrMisfit) {
		t.Fatalf("err = %v, want ErrMisfit", err)
	}
	for _, s := range []string{`kernel 1 "skin_lbs"`, "262144 bytes", "Whole streams take 1671168 bytes", "24 B/item", "palette"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	// Per-item streams too large for a 4 KiB store.
	reg2 := sched.NewRegistry()
	big := sched.StreamSpec{Name: "page", Stride: 8192}
	must(t, reg2.Register(40, sched.Kernel{Name: "pages", Kind: sched.Streaming, In: []sched.StreamSpec{big}, Out: []sched.StreamSpec{big},
		CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}))
	_, m2 := spuSched(t, reg2, Options{LocalStore: 4096}, nil)
	pages := make([]byte, 8192*3)
	pt := sched.Task{Kernel: 40, Affinity: sched.SPU}
	pt.Data.Elements = 3
	pt.Data.In[0] = sched.Stream{Bytes: pages, Stride: 8192, Count: 3}
	pt.Data.Out[0] = sched.Stream{Bytes: make([]byte, len(pages)), Stride: 8192, Count: 3}
	err = runTask(t, m2, pt)
	if !errors.Is(err, ErrMisfit) || !strings.Contains(err.Error(), `"pages"`) || !strings.Contains(err.Error(), "16384") {
		t.Fatalf("per-item misfit: %v", err)
	}
}

// TestSPUFailures: device-only streams, short item-indexed streams, bad
// bindings, kernel errors and panics fail the task with an error, and the
// executor goes on.
func TestSPUFailures(t *testing.T) {
	reg := sched.NewRegistry()
	f4 := []sched.StreamSpec{{Name: "x", Stride: 4}}
	var calls atomic.Int32
	must(t, reg.Register(40, sched.Kernel{Name: "fail", Kind: sched.Streaming, In: f4, Out: f4,
		CPU: func(_ *sched.Ctx, d *sched.TaskData) error {
			if calls.Add(1) == 2 {
				return errors.New("boom")
			}
			return nil
		}}))
	must(t, reg.Register(41, sched.Kernel{Name: "panic", Kind: sched.Streaming, In: f4, Out: f4,
		CPU: func(_ *sched.Ctx, d *sched.TaskData) error { panic("ouch") }}))
	must(t, reg.Register(42, sched.Kernel{Name: "badbind", Kind: sched.Streaming, In: f4, Out: f4, SPU: 3,
		CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}))
	must(t, reg.Register(43, sched.Kernel{Name: "items", Kind: sched.Streaming,
		In: []sched.StreamSpec{{Name: "table", Stride: 4, Rate: sched.Whole}}, Out: f4,
		SPU: Binding{ItemIn: [4]bool{true}},
		CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}))
	x, m := spuSched(t, reg, Options{LocalStore: 4096}, nil)
	n := 5000 // several chunks of a 4 KiB store
	in, out := make([]float32, n), make([]float32, n)
	task := sched.Task{Kernel: 40, Affinity: sched.SPU}
	task.Data.Elements = uint32(n)
	task.Data.In[0], task.Data.Out[0] = sched.StreamOf(in), sched.StreamOf(out)

	err := runTask(t, m, task)
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "staged as [0, ") {
		t.Fatalf("kernel error: %v", err)
	}
	task.Kernel = 41
	if err := runTask(t, m, task); !errors.Is(err, sched.ErrKernelPanic) {
		t.Fatalf("panic: %v", err)
	}
	task.Kernel = 42
	if err := runTask(t, m, task); err == nil || !strings.Contains(err.Error(), "not a spu.Binding") {
		t.Fatalf("bad binding: %v", err)
	}
	task.Kernel = 43
	task.Data.In[0] = sched.StreamOf(in[:10]) // Whole, indexed per item: too short
	if err := runTask(t, m, task); !errors.Is(err, ErrStream) {
		t.Fatalf("short item stream: %v", err)
	}
	task.Kernel = 40
	task.Data.In[0] = sched.Stream{Buffer: 5, Stride: 4, Count: uint32(n)} // device-only
	if err := runTask(t, m, task); !errors.Is(err, ErrStream) || !strings.Contains(err.Error(), "device buffer 5") {
		t.Fatalf("device-only stream: %v", err)
	}
	// Still working.
	task.Data.In[0] = sched.StreamOf(in)
	if err := runTask(t, m, task); err != nil {
		t.Fatal(err)
	}
	if st := x.Stats(); st.Failed != 5 || st.Jobs != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSPUBase: a kernel whose result depends on the item number itself
// runs correctly when it reads the chunk base from Params.
func TestSPUBase(t *testing.T) {
	reg := sched.NewRegistry()
	iota := func(_ *sched.Ctx, d *sched.TaskData) error {
		o := sched.View[uint32](d.Out[0])
		for i := d.Begin; i < d.End; i++ {
			o[i] = d.Params[3] + i // absolute item = base + local index
		}
		return nil
	}
	must(t, reg.Register(40, sched.Kernel{Name: "iota", Kind: sched.Streaming, Out: []sched.StreamSpec{{Name: "o", Stride: 4}},
		CPU: iota, SPU: &Binding{UseBase: true, BaseParam: 3}}))
	_, m := spuSched(t, reg, Options{LocalStore: 4096}, nil)
	out := make([]uint32, 10_000)
	task := sched.Task{Kernel: 40, Affinity: sched.SPU}
	task.Data.Elements = uint32(len(out))
	task.Data.Out[0] = sched.StreamOf(out)
	must(t, runTask(t, m, task))
	for i, v := range out {
		if v != uint32(i) {
			t.Fatalf("out[%d] = %d", i, v)
		}
	}
}

// TestSPUCloseAndEvents: every job is finished by Close, later jobs fail,
// RunEvents report each job, and no goroutine is left.
func TestSPUCloseAndEvents(t *testing.T) {
	base := runtime.NumGoroutine()
	reg := kernelRegistry(t)
	var events atomic.Int32
	obs := observerFunc(func(ev *sched.RunEvent) {
		if ev.Where == sched.SPU && ev.Thread == -1 && ev.Err == nil && ev.Stop >= ev.Start {
			events.Add(1)
		}
	})
	x, err := New(Options{Units: 2, LocalStore: 8192})
	must(t, err)
	s, err := sched.New(sched.Config{Kernels: reg, Observer: obs})
	must(t, err)
	must(t, s.AttachExecutor(sched.ExecSPU, x))
	var ids []sched.TaskID
	outs := make([][]float32, 40)
	for i := range outs {
		task, out := saxpyTask(rng(uint64(i)), 3000+i)
		task.Affinity = sched.SPU
		outs[i] = out
		id, err := s.Add(&task)
		must(t, err)
		ids = append(ids, id)
	}
	must(t, s.Close()) // closes x: all 40 jobs finish first
	for _, id := range ids {
		if err := s.Wait(id); err != nil {
			t.Fatal(err)
		}
	}
	if st := x.Stats(); st.Jobs != 40 || events.Load() != 40 {
		t.Fatalf("jobs %d, events %d, want 40", st.Jobs, events.Load())
	}
	for i, out := range outs {
		if out[0] == 0 && out[len(out)-1] == 0 {
			t.Fatalf("job %d produced nothing", i)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("%d goroutines left, %d before", n, base)
	}
	// After Close a job fails at once.
	s2, err := sched.New(sched.Config{Kernels: reg})
	must(t, err)
	defer s2.Close()
	x2, err := New(Options{})
	must(t, err)
	must(t, x2.Close())
	must(t, s2.AttachExecutor(sched.ExecSPU, x2))
	task, _ := saxpyTask(rng(1), 10)
	task.Affinity = sched.SPU
	id, err := s2.Add(&task)
	must(t, err)
	if err := s2.Wait(id); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := New(Options{LocalStore: 100}); err == nil {
		t.Fatal("100-byte local store accepted")
	}
}

type observerFunc func(*sched.RunEvent)

func (f observerFunc) TaskRan(ev *sched.RunEvent) { f(ev) }

// BenchmarkSPU measures the local-store discipline against plain CPU
// workers on one thread's worth of work: saxpy (memory-bound: copies
// double the traffic) and skinning (compute-bound: copies hide behind the
// kernel).
func BenchmarkSPU(b *testing.B) {
	reg := kernelRegistry(b)
	r := rng(3)
	sax, _ := saxpyTask(r, 1<<20)
	skin, _ := skinTask(r, 1<<18, 16, 90)
	for _, c := range []struct {
		name string
		task sched.Task
	}{{"saxpy-1M", sax}, {"skin-256K", skin}} {
		for _, where := range []sched.Affinity{sched.AnyWorker, sched.SPU} {
			b.Run(fmt.Sprintf("%s/%v", c.name, where), func(b *testing.B) {
				x, m := spuSched(b, reg, Options{}, nil)
				task := c.task
				task.Affinity = where
				b.ReportAllocs()
				b.SetBytes(int64(len(task.Data.Out[0].Bytes)))
				for b.Loop() {
					if err := runTask(b, m, task); err != nil {
						b.Fatal(err)
					}
				}
				if where == sched.SPU {
					st := x.Stats()
					b.ReportMetric(float64(st.Stall)/float64(b.N), "stall-ns/op")
					b.ReportMetric(float64(st.Chunks)/float64(b.N), "chunks/op")
				}
			})
		}
	}
}
