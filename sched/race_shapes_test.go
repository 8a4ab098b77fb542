package sched

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// Kernels of these tests: "copy" reads up to two Whole streams and writes
// up to two, any stride, and runs the hook in Data (if any) first; "do" is
// a simple kernel that runs the hook in Data.
const (
	kRvCopy KernelID = 1
	kRvDo   KernelID = 2
)

type rvHook struct {
	f func(c *Ctx, d *TaskData) error
}

type rvEnv struct {
	s   *Scheduler
	ran atomic.Int32
}

func rvSched(t testing.TB, cfg Config) *rvEnv {
	e := &rvEnv{}
	reg := NewRegistry()
	hook := func(c *Ctx, d *TaskData) error {
		e.ran.Add(1)
		if h, ok := d.Data.(*rvHook); ok && h.f != nil {
			return h.f(c, d)
		}
		return nil
	}
	must(t, reg.Register(kRvCopy, Kernel{Name: "copy", Kind: Streaming,
		In:  []StreamSpec{{Name: "src", Rate: Whole}, {Name: "src2", Rate: Whole}},
		Out: []StreamSpec{{Name: "dst", Rate: Whole}, {Name: "dst2", Rate: Whole}},
		CPU: hook}))
	must(t, reg.Register(kRvDo, Kernel{Name: "do", CPU: hook}))
	cfg.Kernels = reg
	cfg.CheckRaces = true
	s, err := New(cfg)
	must(t, err)
	e.s = s
	t.Cleanup(func() { s.Close() })
	return e
}

func rvBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// cp is a "copy" task reading src, writing dst (nil: no stream).
func cp(src, dst []byte, dep TaskID) *Task {
	t := &Task{Kernel: kRvCopy, Dependency: dep}
	t.Data.Elements = 1
	if src != nil {
		t.Data.In[0] = Stream{Bytes: src, Stride: 1, Count: uint32(len(src))}
	}
	if dst != nil {
		t.Data.Out[0] = Stream{Bytes: dst, Stride: 1, Count: uint32(len(dst))}
	}
	return t
}

func do(f func(c *Ctx, d *TaskData) error) *Task {
	return &Task{Kernel: kRvDo, Data: TaskData{Data: &rvHook{f}}}
}

func wantRace(t *testing.T, err error, what string) *RaceError {
	t.Helper()
	var re *RaceError
	if !errors.Is(err, ErrRace) || !errors.As(err, &re) {
		t.Fatalf("%s: err %v, want a *RaceError", what, err)
	}
	return re
}

// TestRaceCheckValidShapes: valid programs a user writes with the check
// on; none may be refused.
func TestRaceCheckValidShapes(t *testing.T) {
	within(t, 20*time.Second, "valid shapes", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		g := gate(t, s)
		// Two readers of one input, each writing its own output.
		in, out := make([]byte, 64), make([]byte, 128)
		_, err := s.Add(cp(in, out[:64], g))
		must(t, err)
		_, err = s.Add(cp(in, out[64:], g))
		must(t, err)
		// Adjacent byte ranges at odd boundaries.
		b := make([]byte, 64)
		for _, r := range [][2]int{{0, 3}, {3, 7}, {7, 8}, {8, 63}, {63, 64}} {
			_, err = s.Add(cp(nil, b[r[0]:r[1]], g))
			must(t, err)
		}
		// Different element types over one array, disjoint.
		f := make([]float32, 32)
		fb := rvBytes(f)
		ft := &Task{Kernel: kRvCopy, Dependency: g}
		ft.Data.Elements = 1
		ft.Data.Out[0] = StreamOf(f[:16])
		_, err = s.Add(ft)
		must(t, err)
		_, err = s.Add(cp(nil, fb[64:65], g)) // the first byte after f[:16]
		must(t, err)
		u16 := unsafe.Slice((*uint16)(unsafe.Pointer(&fb[66])), 31)
		ut := &Task{Kernel: kRvCopy, Dependency: g}
		ut.Data.Elements = 1
		ut.Data.Out[0] = StreamOf(u16)
		_, err = s.Add(ut)
		must(t, err)
		// Zero-length streams, also inside a live writer's range.
		z := cp(b[5:5], b[10:10], g)
		z.Data.In[1] = StreamOf([]float32{})
		_, err = s.Add(z)
		must(t, err)
		_, err = s.Add(cp(b[0:0], b[64:], g))
		must(t, err)
		must(t, s.Run(g))
		must(t, s.Wait(g))
	})
}

// TestRaceCheckOrderedShapes: writers of one array ordered by a
// dependency, by a Wait in between (from outside and from a kernel), by a
// join, as children of a parent ordered before its dependents; a slot
// reused many times; a stale ID as a dependency; a child a kernel adds
// reading what its task's dependency wrote.
func TestRaceCheckOrderedShapes(t *testing.T) {
	within(t, 20*time.Second, "ordered shapes", func() {
		e := rvSched(t, Config{Workers: 2, PoolSize: 16})
		s := e.s
		y := make([]byte, 64)
		// A chain of dependencies, then a Wait, many times over a pool of
		// 16 slots: slots are reused under the same memory.
		prev := NoTask
		for i := range 200 {
			id, err := s.Add(cp(nil, y, prev))
			if err != nil {
				t.Fatalf("chain %d: %v", i, err)
			}
			prev = id
			if i%7 == 6 {
				must(t, s.Wait(id))
			}
		}
		must(t, s.Wait(prev))
		// A finished task as a Dependency whose slot now holds another
		// task: satisfied at once, compared with the live one (which
		// writes other memory).
		old := prev
		g := gate(t, s)
		_, err := s.Add(cp(nil, make([]byte, 8), g))
		must(t, err)
		over, err := s.Add(cp(nil, y, old))
		must(t, err)
		must(t, s.Run(g))
		must(t, s.Wait(over))
		// From a kernel: add, Wait, add again over the same memory; and
		// children of the kernel's task, each over its own part, waited
		// for, then one writing all of it.
		var kerr error
		id, err := s.Add(do(func(c *Ctx, _ *TaskData) error {
			for range 20 {
				a, err := c.Add(cp(nil, y, NoTask))
				if err != nil {
					return err
				}
				if err := c.Wait(a); err != nil {
					return err
				}
			}
			var kids [4]TaskID
			var err error
			for i := range kids {
				k := cp(nil, y[i*16:i*16+16], NoTask)
				k.Parent = c.Current()
				if kids[i], err = c.Add(k); err != nil {
					return err
				}
			}
			for _, k := range kids {
				if err := c.Wait(k); err != nil {
					return err
				}
			}
			k := cp(nil, y, NoTask)
			k.Parent = c.Current()
			_, kerr = c.Add(k)
			return kerr
		}))
		must(t, err)
		if err := s.Wait(id); err != nil {
			t.Fatalf("kernel adding, waiting, adding again: %v", err)
		}
		// A join over writers of disjoint parts; readers of the whole
		// after it; a writer of the whole after the readers' join.
		join, err := s.Create(&Task{})
		must(t, err)
		for i := 0; i < 64; i += 8 {
			w := cp(nil, y[i:i+8], NoTask)
			w.Parent = join
			_, err = s.Add(w)
			must(t, err)
		}
		must(t, s.Run(join))
		readers, err := s.Create(&Task{})
		must(t, err)
		for range 4 {
			r := cp(y, make([]byte, 64), join)
			r.Parent = readers
			_, err = s.Add(r)
			must(t, err)
		}
		must(t, s.Run(readers))
		last, err := s.Add(cp(nil, y, readers))
		must(t, err)
		must(t, s.Wait(last))
		// A kernel whose task depends on a writer adds a child reading
		// what the writer wrote: the writer finished before the kernel
		// started.
		g2 := gate(t, s)
		wr, err := s.Add(cp(nil, y, g2))
		must(t, err)
		var childErr error
		pt := do(func(c *Ctx, _ *TaskData) error {
			k := cp(y, make([]byte, 64), NoTask)
			k.Parent = c.Current()
			_, childErr = c.Add(k)
			return childErr
		})
		pt.Dependency = wr
		p, err := s.Add(pt)
		must(t, err)
		must(t, s.Run(g2))
		if err := s.Wait(p); err != nil {
			t.Fatalf("a child reading what its parent's dependency wrote: %v", err)
		}
	})
}

// TestRaceCheckSplitAndDevice: a streaming task split into pieces, one
// co-executed on a device and CPU workers by a Placer, GPU tasks over host
// memory: readers of one input, a CPU reader after a GPU writer.
func TestRaceCheckSplitAndDevice(t *testing.T) {
	within(t, 20*time.Second, "split and device", func() {
		const kSplit KernelID = 3
		e := rvSched(t, Config{Workers: 2, Placer: splitPlacer{}})
		s := e.s
		must(t, s.AttachExecutor(ExecGPU, goExec{}))
		must(t, s.Kernels().Register(kSplit, Kernel{Name: "split", Kind: Streaming, Grain: 64,
			In:  []StreamSpec{{Name: "x", Stride: 4}},
			Out: []StreamSpec{{Name: "y", Stride: 4}},
			CPU: func(_ *Ctx, d *TaskData) error {
				x, y := View[float32](d.In[0]), View[float32](d.Out[0])
				for i := d.Begin; i < d.End; i++ {
					y[i] = x[i] + 1
				}
				return nil
			}}))
		x, y := make([]float32, 4096), make([]float32, 4096)
		for _, a := range []Affinity{AnyWorker, Auto} {
			tk := &Task{Kernel: kSplit, Affinity: a}
			tk.Data.Elements = 4096
			tk.Data.In[0], tk.Data.Out[0] = StreamOf(x), StreamOf(y)
			id, err := s.Add(tk)
			must(t, err)
			must(t, s.Wait(id))
		}
		g := gate(t, s)
		host := make([]byte, 256)
		out := make([]byte, 256)
		gw := cp(host[:128], out[:128], g)
		gw.Affinity = GPU
		gid, err := s.Add(gw)
		must(t, err)
		gr := cp(host[:128], out[128:], g)
		gr.Affinity = GPU
		_, err = s.Add(gr)
		must(t, err)
		_, err = s.Add(cp(out[:128], host[128:], gid)) // after the GPU writer
		must(t, err)
		must(t, s.Run(g))
	})
}

// splitPlacer sends half of every Auto task to the GPU.
type splitPlacer struct{}

func (splitPlacer) Place(_ KernelID, _ *Kernel, d *TaskData) (Affinity, uint32) {
	return GPU, (d.End - d.Begin) / 2
}

// TestRaceCheckGraphReplays: a graph whose nodes write one array in a
// Precede chain, replayed, re-pointed with SetData between runs (to
// disjoint memory, then back); a dynamic task after a run and one the
// run is started after.
func TestRaceCheckGraphReplays(t *testing.T) {
	within(t, 20*time.Second, "graph replays", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y, y2 := make([]byte, 64), make([]byte, 64)
		gr := s.NewGraph()
		a := addNode(t, gr, cp(nil, y, NoTask))
		b := addNode(t, gr, cp(y, y2, NoTask))
		c := addNode(t, gr, cp(nil, y, NoTask))
		must(t, gr.Precede(a, b))
		must(t, gr.Precede(b, c))
		for i := range 20 {
			if err := gr.Run(); err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			switch i % 3 {
			case 0: // c to other memory: still valid
				must(t, gr.SetData(c, &cp(nil, make([]byte, 8), NoTask).Data))
			case 1:
				must(t, gr.SetData(c, &cp(nil, y, NoTask).Data))
			}
			id, err := s.Add(cp(y, y2, NoTask))
			must(t, err)
			must(t, s.Wait(id))
		}
		wg := gate(t, s)
		w, err := s.Add(cp(nil, y, wg))
		must(t, err)
		run, err := gr.Start(nil, w)
		if err != nil {
			t.Fatalf("a run started after a live writer: %v", err)
		}
		after, err := s.Add(cp(nil, y, run))
		if err != nil {
			t.Fatalf("a writer after the run: %v", err)
		}
		must(t, s.Run(wg))
		must(t, s.Wait(after))
		if want := int32(20*3 + 20 + 3 + 1 + 1); e.ran.Load() != want {
			t.Fatalf("kernels ran %d times, want %d", e.ran.Load(), want)
		}
	})
}

// TestRaceCheckRefusals: hazards a user makes, each refused at Add with an
// error naming both tasks, kernels and streams and the bytes both touch;
// the refused task never runs.
func TestRaceCheckRefusals(t *testing.T) {
	within(t, 20*time.Second, "refusals", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		g := gate(t, s)
		y := make([]float32, 32)
		yb := rvBytes(y)
		wt := func(dst []byte) *Task { return cp(nil, dst, g) }
		a, err := s.Add(wt(yb[0:64]))
		must(t, err)
		// Offset by one element, through another slice header.
		ft := &Task{Kernel: kRvCopy, Dependency: g}
		ft.Data.Elements = 1
		ft.Data.Out[0] = StreamOf(y[15:20])
		re := wantRace(t, addErr(s, ft), "a write one element into another's")
		if re.Other != a || re.End-re.Begin != 4 || re.Stream != "out[0] dst" || re.OtherStream != "out[0] dst" {
			t.Fatalf("race %+v", re)
		}
		msg := re.Error()
		for _, want := range []string{a.String(), "the task being added", `"copy"`, "out[0] dst", "(4 bytes)"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not name %q", msg, want)
			}
		}
		// One byte, through a uint8 view of the float32 array.
		re = wantRace(t, addErr(s, wt(yb[63:64])), "a one-byte write")
		if re.End-re.Begin != 1 {
			t.Fatalf("race %+v", re)
		}
		// A read of written bytes, and a write of read bytes.
		wantRace(t, addErr(s, cp(yb[60:70], make([]byte, 10), g)), "read of written bytes")
		rin := make([]byte, 32)
		rid, err := s.Add(cp(rin, yb[64:96], g))
		must(t, err)
		re = wantRace(t, addErr(s, cp(nil, rin[31:], g)), "write of read bytes")
		if re.Writes != true || re.OtherWrites != false || re.OtherStream != "in[0] src" {
			t.Fatalf("race %+v", re)
		}
		must(t, s.Run(g))
		must(t, s.Wait(a))
		must(t, s.Wait(rid))
		if n := e.ran.Load(); n != 2 {
			t.Fatalf("%d kernels ran, want 2 (refused tasks must not run)", n)
		}
	})
}

func addErr(s *Scheduler, t *Task) error {
	_, err := s.Add(t)
	return err
}

// TestRaceCheckChildOfRunningParent: a parent's kernel that reads y adds a
// child writing y: refused, to the kernel (the parent still runs); a child
// writing other memory is not.
func TestRaceCheckChildOfRunningParent(t *testing.T) {
	within(t, 20*time.Second, "child of a running parent", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y, z := make([]byte, 32), make([]byte, 32)
		var bad, good error
		pt := cp(y, z, NoTask)
		pt.Data.Data = &rvHook{func(c *Ctx, _ *TaskData) error {
			k := cp(nil, y[8:9], NoTask)
			k.Parent = c.Current()
			_, bad = c.Add(k)
			k = cp(nil, make([]byte, 4), NoTask)
			k.Parent = c.Current()
			_, good = c.Add(k)
			return nil
		}}
		p, err := s.Add(pt)
		must(t, err)
		must(t, s.Wait(p))
		re := wantRace(t, bad, "child writing its running parent's input")
		if re.Other != p || re.OtherStream != "in[0] src" {
			t.Fatalf("race %+v", re)
		}
		must(t, good)
	})
}

// TestRaceCheckRefusedRunFailsTask: a held task refused at Run fails
// visibly: Run and Wait return the race, its parent fails, its dependents
// fail, its kernel never runs, and the children added while it was held
// still run.
func TestRaceCheckRefusedRunFailsTask(t *testing.T) {
	within(t, 20*time.Second, "refused Run", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		g := gate(t, s)
		y := make([]byte, 16)
		parent, err := s.Create(&Task{})
		must(t, err)
		ht := cp(nil, y, NoTask)
		ht.Parent = parent
		h, err := s.Create(ht)
		must(t, err)
		kid := cp(nil, make([]byte, 4), NoTask)
		kid.Parent = h
		_, err = s.Add(kid)
		must(t, err)
		dep, err := s.Add(&Task{Dependency: h})
		must(t, err)
		_, err = s.Add(cp(y[4:5], make([]byte, 1), g)) // reads what h writes
		must(t, err)
		wantRace(t, s.Run(h), "Run of a held writer")
		must(t, s.Run(parent))
		wantRace(t, s.Wait(h), "Wait of the refused task")
		if err := s.Wait(parent); !errors.Is(err, ErrChildFailed) || !errors.Is(err, ErrRace) {
			t.Fatalf("parent: %v, want ErrChildFailed wrapping ErrRace", err)
		}
		if err := s.Wait(dep); !errors.Is(err, ErrDepFailed) {
			t.Fatalf("dependent: %v", err)
		}
		if n := e.ran.Load(); n != 1 {
			t.Fatalf("%d kernels ran, want 1 (the child)", n)
		}
	})
}

// TestRaceCheckGraphAgainstTasks: a graph node and a dynamic task over one
// array, each way round, refused; a node that blocks while a task is
// added from outside during the run.
func TestRaceCheckGraphAgainstTasks(t *testing.T) {
	within(t, 20*time.Second, "graph against tasks", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y := make([]byte, 64)
		gr := s.NewGraph()
		running, release := make(chan struct{}), make(chan struct{})
		n := cp(y[:32], make([]byte, 32), NoTask)
		n.Data.Data = &rvHook{func(*Ctx, *TaskData) error {
			close(running)
			<-release
			return nil
		}}
		addNode(t, gr, n)
		done := make(chan error, 1)
		go func() { done <- gr.Run() }()
		<-running
		re := wantRace(t, addErr(s, cp(nil, y[31:40], NoTask)), "a task writing a running node's input")
		if re.OtherNode != 0 || re.Node != -1 {
			t.Fatalf("race %+v", re)
		}
		close(release)
		must(t, <-done)
		g := gate(t, s)
		w, err := s.Add(cp(nil, y[0:1], g))
		must(t, err)
		gr.SetData(0, &cp(y[:32], make([]byte, 32), NoTask).Data)
		re = wantRace(t, gr.Run(), "a run over a live writer's bytes")
		if re.Other != w || re.Node != 0 {
			t.Fatalf("race %+v", re)
		}
	})
}

// TestRaceCheckEventOrder: a reader that waits (WaitEvent) for an event
// the writer signals after writing is ordered at run time, but not by a
// parent, dependency or join: the check refuses the pair, as documented.
func TestRaceCheckEventOrder(t *testing.T) {
	within(t, 20*time.Second, "event order", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y := make([]byte, 16)
		ev := s.NewEvent()
		wr := cp(nil, y, NoTask)
		wr.Data.Data = &rvHook{func(*Ctx, *TaskData) error { ev.Signal(); return nil }}
		rd := cp(y, make([]byte, 16), NoTask)
		rd.Data.Data = &rvHook{func(c *Ctx, _ *TaskData) error { c.WaitEvent(ev); return nil }}
		g := gate(t, s)
		rd.Dependency = g
		_, err := s.Add(rd)
		must(t, err)
		re := wantRace(t, addErr(s, wr), "a writer ordered before the reader only by an Event")
		if re.Writes != true || re.OtherWrites != false {
			t.Fatalf("race %+v", re)
		}
	})
}

// TestRaceCheckClosedSchedulerFreed: a closed scheduler that ran checked
// tasks is garbage, as one that ran unchecked: nothing global keeps its
// pool and checker alive.
func TestRaceCheckClosedSchedulerFreed(t *testing.T) {
	t.Setenv(EnvCheckRaces, "0")
	y := make([]byte, 64)
	reg := NewRegistry()
	must(t, reg.Register(kRvCopy, Kernel{Name: "copy", Kind: Streaming,
		Out: []StreamSpec{{Name: "dst", Rate: Whole}}, CPU: func(*Ctx, *TaskData) error { return nil }}))
	for _, check := range []bool{false, true} {
		var freed atomic.Int32
		const n = 8
		for range n {
			s, err := New(Config{Workers: 1, PoolSize: 1024, Kernels: reg, CheckRaces: check})
			must(t, err)
			runtime.AddCleanup(s, func(p *atomic.Int32) { p.Add(1) }, &freed)
			id, err := s.Add(cp(nil, y, NoTask))
			must(t, err)
			must(t, s.Wait(id))
			must(t, s.Close())
		}
		for i := 0; i < 50 && freed.Load() < n; i++ {
			runtime.GC()
			time.Sleep(2 * time.Millisecond)
		}
		t.Logf("CheckRaces %v: %d of %d closed schedulers collected", check, freed.Load(), n)
		if freed.Load() < n/2 {
			t.Errorf("CheckRaces %v: %d of %d closed schedulers were collected", check, freed.Load(), n)
		}
	}
}

// TestRaceCheckAllocations: with the check on, a frame of streaming tasks
// (a join, writers under it, a reader after it) added and waited for
// allocates nothing once warm, tasks with eight ranges (host mirrors of
// device buffers) included.
func TestRaceCheckAllocations(t *testing.T) {
	e := rvSched(t, Config{Workers: 1, PoolSize: 64})
	s := e.s
	m, err := s.RegisterThread("main")
	must(t, err)
	y := make([]byte, 256)
	mirror := func(b []byte, buf BufferID) Stream { // buffer offset = offset in y
		off := uint64(uintptr(unsafe.Pointer(&b[0])) - uintptr(unsafe.Pointer(&y[0])))
		return Stream{Bytes: b, Stride: 1, Count: uint32(len(b)), Buffer: buf, Offset: off}
	}
	frame := func(wide bool) {
		j, err := m.Create(&Task{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			w := cp(nil, y[i*64:i*64+64], NoTask)
			if wide {
				w.Data.In[0] = mirror(y[128+i*8:128+i*8+8], 1)
				w.Data.In[1] = mirror(y[160+i*8:160+i*8+8], 2)
				w.Data.Out[0] = mirror(y[i*32:i*32+32], 3)
				w.Data.Out[1] = mirror(y[200+i*8:200+i*8+8], 4)
			}
			w.Parent = j
			if _, err := m.Add(w); err != nil {
				t.Fatal(err)
			}
		}
		must(t, m.Run(j))
		r, err := m.Add(cp(y, nil, j))
		if err != nil {
			t.Fatal(err)
		}
		must(t, m.Wait(r))
	}
	for _, wide := range []bool{false, true} {
		for range 200 {
			frame(wide)
		}
		if a := testing.AllocsPerRun(100, func() { frame(wide) }); a != 0 {
			t.Errorf("eight ranges a task %v: %v allocations per checked frame", wide, a)
		}
	}

}

// BenchmarkRaceCheckGraphSetData: a 256-node graph (pairs of nodes in a
// chain, every node reading one shared table, each writing its own
// output) re-pointed between two buffer sets before every run, checked
// off and on; ns/op per node.
func BenchmarkRaceCheckGraphSetData(b *testing.B) {
	for _, check := range []string{"0", "1"} {
		b.Run("check="+check, func(b *testing.B) {
			s, m := graphRaceBenchSched(b, check)
			const nodes = 256
			lut := make([]byte, 64)
			sets := [2][]byte{make([]byte, 64*nodes), make([]byte, 64*nodes)}
			g := s.NewGraph()
			for i := range nodes {
				n := addNode(b, g, span(lut, sets[0][i*64:i*64+64]))
				if i%2 == 1 {
					must(b, g.Precede(n-1, n))
				}
			}
			f := 0
			run := func() {
				set := sets[f%2]
				f++
				for i := range nodes {
					d := span(lut, set[i*64:i*64+64]).Data
					if err := g.SetData(GraphNode(i), &d); err != nil {
						b.Fatal(err)
					}
				}
				if err := g.RunCtx(m); err != nil {
					b.Fatal(err)
				}
			}
			run()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += nodes {
				run()
			}
		})
	}
}

// BenchmarkRaceCheckFanOut: a frame of n writers (children of a join,
// each its own part of y) and n readers of all of y depending on the
// join, added from a registered thread and waited for, checked off and
// on; ns/op is per task. A reader's check walks back through the join to
// its n children.
func BenchmarkRaceCheckFanOut(b *testing.B) {
	for _, n := range []int{16, 256, 1024} {
		for _, check := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/check=%v", n, check), func(b *testing.B) {
				b.Setenv(EnvCheckRaces, "0")
				e := rvSched(b, Config{Workers: 1, PoolSize: 4096})
				e.s.cfg.CheckRaces = check
				m, err := e.s.RegisterThread("main")
				must(b, err)
				y := make([]byte, 16*n)
				outs := make([]byte, 16*n)
				b.ResetTimer()
				for i := 0; i < b.N; i += 2 * n {
					root, _ := m.Create(&Task{})
					j, _ := m.Create(&Task{Parent: root})
					for k := range n {
						w := cp(nil, y[k*16:k*16+16], NoTask)
						w.Parent = j
						if _, err := m.Add(w); err != nil {
							b.Fatal(err)
						}
					}
					m.Run(j)
					for k := range n {
						r := cp(y, outs[k*16:k*16+16], j)
						r.Parent = root
						if _, err := m.Add(r); err != nil {
							b.Fatal(err)
						}
					}
					m.Run(root)
					m.Wait(root)
				}
			})
		}
	}
}

// TestRaceCheckRefusedIDNotReused: a RaceError for a refused Add does not
// name the ID the refused task would have had: the next Add gets it.
func TestRaceCheckRefusedIDNotReused(t *testing.T) {
	e := rvSched(t, Config{Workers: 1})
	s := e.s
	g := gate(t, s)
	y := make([]byte, 8)
	_, err := s.Add(cp(nil, y, g))
	must(t, err)
	re := wantRace(t, addErr(s, cp(nil, y, g)), "overlapping writers")
	id, err := s.Add(cp(nil, make([]byte, 8), g))
	must(t, err)
	if re.Task != NoTask || strings.Contains(re.Error(), id.String()) {
		t.Errorf("the refused task is named %v (%q); the next task got %v", re.Task, re.Error(), id)
	}
}

// TestRaceCheckAbandoned: a kernel abandoned while it still runs (hung)
// may still write its output: a task over the same memory added after
// the abandoned task reads as finished is refused until the kernel
// returns, and then accepted.
func TestRaceCheckAbandoned(t *testing.T) {
	within(t, 20*time.Second, "abandoned", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y := make([]byte, 16)
		running, release := make(chan struct{}), make(chan struct{})
		h := cp(nil, y, NoTask)
		h.Data.Data = &rvHook{func(*Ctx, *TaskData) error {
			close(running)
			<-release
			return nil
		}}
		id, err := s.Add(h)
		must(t, err)
		<-running
		must(t, s.Abandon(id, nil))
		if err := s.Wait(id); !errors.Is(err, ErrAbandoned) {
			t.Fatalf("Wait: %v", err)
		}
		re := wantRace(t, addErr(s, cp(nil, y, NoTask)), "a writer beside the abandoned kernel that still runs")
		t.Logf("refused: %v", re)
		close(release)
		for i := 0; ; i++ {
			nid, err := s.Add(cp(nil, y, NoTask))
			if err == nil {
				must(t, s.Wait(nid))
				break
			}
			if !errors.Is(err, ErrRace) || i > 1000 {
				t.Fatalf("after the kernel returned: %v", err)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// TestRaceCheckConcurrentFrames: goroutines adding frames at once (a join
// over writers of their own quarter of their own array, a reader of the
// whole after it, a writer of the whole after the reader), from outside
// and from kernels: nothing refused, everything runs.
func TestRaceCheckConcurrentFrames(t *testing.T) {
	within(t, 60*time.Second, "concurrent frames", func() {
		e := rvSched(t, Config{Workers: 2, PoolSize: 256})
		s := e.s
		const gor, frames = 4, 150
		errs := make(chan error, gor)
		frame := func(add func(*Task) (TaskID, error), create func(*Task) (TaskID, error), run func(TaskID) error, wait func(TaskID) error, y []byte) error {
			j, err := create(&Task{})
			if err != nil {
				return err
			}
			for q := range 4 {
				w := cp(nil, y[q*16:q*16+16], NoTask)
				w.Parent = j
				if _, err := add(w); err != nil {
					run(j)
					return err
				}
			}
			if err := run(j); err != nil {
				return err
			}
			r, err := add(cp(y, make([]byte, 64), j))
			if err != nil {
				return err
			}
			w, err := add(cp(nil, y, r))
			if err != nil {
				return err
			}
			return wait(w)
		}
		for gi := range gor {
			go func() {
				y := make([]byte, 64)
				for f := range frames {
					var err error
					if f%2 == 0 || gi%2 == 0 {
						err = frame(s.Add, s.Create, s.Run, s.Wait, y)
					} else {
						var id TaskID
						id, err = s.Add(do(func(c *Ctx, _ *TaskData) error {
							return frame(c.Add, c.Create, c.Run, c.Wait, y)
						}))
						if err == nil {
							err = s.Wait(id)
						}
					}
					if err != nil {
						errs <- fmt.Errorf("goroutine %d frame %d: %w", gi, f, err)
						return
					}
				}
				errs <- nil
			}()
		}
		for range gor {
			must(t, <-errs)
		}
	})
}

// TestRaceCheckStartAfterSeveral: a graph run started after several live
// writers of what its nodes read, and a task after the run writing it.
func TestRaceCheckStartAfterSeveral(t *testing.T) {
	within(t, 20*time.Second, "start after several", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y := make([]byte, 64)
		g := gate(t, s)
		var after []TaskID
		for q := range 4 {
			id, err := s.Add(cp(nil, y[q*16:q*16+16], g))
			must(t, err)
			after = append(after, id)
		}
		gr := s.NewGraph()
		a := addNode(t, gr, cp(y, make([]byte, 64), NoTask))
		b := addNode(t, gr, cp(nil, y[8:9], NoTask))
		must(t, gr.Precede(a, b))
		run, err := gr.Start(nil, after...)
		if err != nil {
			t.Fatalf("Start after the writers: %v", err)
		}
		// Without the last writer in after: refused.
		gr2 := s.NewGraph()
		addNode(t, gr2, cp(y, make([]byte, 64), NoTask))
		_, err = gr2.Start(nil, after[:3]...)
		wantRace(t, err, "a run started after three of four writers")
		w, err := s.Add(cp(nil, y, run))
		must(t, err)
		must(t, s.Run(g))
		must(t, s.Wait(w))
	})
}

// TestRaceCheckRefusedStartReturns: a Start refused by the check returns
// its error at once, also when its afters have not finished (here: held
// behind a gate the caller releases only after Start returned).
func TestRaceCheckRefusedStartReturns(t *testing.T) {
	within(t, 10*time.Second, "refused Start", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y := make([]byte, 16)
		g := gate(t, s)
		w1, err := s.Add(cp(nil, make([]byte, 16), g))
		must(t, err)
		w2, err := s.Add(cp(nil, y, g)) // not in after: races the node
		must(t, err)
		gr := s.NewGraph()
		addNode(t, gr, cp(y, make([]byte, 16), NoTask))
		_, err = gr.Start(nil, w1)
		wantRace(t, err, "Start over a live writer not in after")
		must(t, s.Run(g))
		must(t, s.Wait(w1))
		must(t, s.Wait(w2))
		run, err := gr.Start(nil) // the writers finished: accepted
		must(t, err)
		must(t, s.Wait(run))
	})
}

// rvSegExec is a SegmentExecutor whose jobs complete at once, from a
// goroutine of their own.
type rvSegExec struct{ goExec }

type rvSeg struct{}

func (rvSeg) Changed(int) {}
func (rvSeg) Close()      {}

func (rvSegExec) NewSegment([]SegmentNode) (Segment, error) { return rvSeg{}, nil }

// TestRaceCheckGraphSegments: GPU nodes grouped into one segment (the
// same predecessors) over disjoint parts, a CPU node after them reading
// the whole: valid. Two members of one segment overlapping: refused. A
// member and a successor of another member only, with no Precede chain
// between the two: refused as without segments (the verdict must not
// depend on whether the executor makes segments).
func TestRaceCheckGraphSegments(t *testing.T) {
	within(t, 20*time.Second, "graph segments", func() {
		for _, seg := range []bool{false, true} {
			e := rvSched(t, Config{Workers: 2})
			s := e.s
			if seg {
				must(t, s.AttachExecutor(ExecGPU, rvSegExec{}))
			} else {
				must(t, s.AttachExecutor(ExecGPU, goExec{}))
			}
			y := make([]byte, 64)
			gpu := func(src, dst []byte) *Task {
				t := cp(src, dst, NoTask)
				t.Affinity = GPU
				return t
			}
			gr := s.NewGraph()
			a := addNode(t, gr, gpu(nil, y[0:16]))
			b := addNode(t, gr, gpu(nil, y[16:32]))
			c := addNode(t, gr, cp(y[:32], y[32:], NoTask))
			must(t, gr.Precede(a, c))
			must(t, gr.Precede(b, c))
			for range 3 {
				if err := gr.Run(); err != nil {
					t.Fatalf("segments %v: %v", seg, err)
				}
			}
			gr2 := s.NewGraph()
			addNode(t, gr2, gpu(nil, y[0:16]))
			addNode(t, gr2, gpu(nil, y[15:20]))
			re := wantRace(t, gr2.Run(), fmt.Sprintf("segments %v: two overlapping GPU roots", seg))
			if re.Node < 0 || re.OtherNode < 0 || re.Node == re.OtherNode {
				t.Fatalf("race %+v", re)
			}
			gr3 := s.NewGraph()
			a = addNode(t, gr3, gpu(nil, y[0:16]))
			addNode(t, gr3, gpu(nil, y[16:32])) // b: no successor
			x := addNode(t, gr3, cp(y[16:32], y[32:48], NoTask))
			must(t, gr3.Precede(a, x)) // x after a only: b and x unordered
			if err := gr3.Run(); !errors.Is(err, ErrRace) {
				t.Errorf("segments %v: a node reading what an unordered GPU node writes: %v, want ErrRace", seg, err)
			}
		}
	})
}

// BenchmarkRaceCheckAdd: independent streaming tasks (one item each,
// reading a shared table, writing 16 bytes of their own), 256 children of
// a root per batch, added from a registered thread and waited for,
// checked off and on; ns/op per task.
func BenchmarkRaceCheckAdd(b *testing.B) {
	for _, check := range []bool{false, true} {
		b.Run(fmt.Sprintf("check=%v", check), func(b *testing.B) {
			b.Setenv(EnvCheckRaces, "0")
			e := rvSched(b, Config{Workers: 1})
			e.s.cfg.CheckRaces = check
			m, err := e.s.RegisterThread("main")
			must(b, err)
			const batch = 256
			lut, y := make([]byte, 64), make([]byte, 16*batch)
			tk := cp(lut, nil, NoTask)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; {
				root, _ := m.Create(&Task{})
				tk.Parent = root
				for j := 0; j < batch && i < b.N; j++ {
					tk.Data.Out[0] = Stream{Bytes: y[j*16 : j*16+16], Stride: 1, Count: 16}
					if _, err := m.Add(tk); err != nil {
						b.Fatal(err)
					}
					i++
				}
				m.Run(root)
				m.Wait(root)
			}
		})
	}
}

// TestRaceCheckJoinTasks: halves of a JoinTasks that overlap run in turn
// (valid); a half is no task but part of its caller's kernel, so it is
// not compared with live tasks (documented): the caller's streams must
// name what it touches.
func TestRaceCheckJoinTasks(t *testing.T) {
	within(t, 20*time.Second, "JoinTasks", func() {
		e := rvSched(t, Config{Workers: 2})
		s := e.s
		y := make([]byte, 32)
		var jerr error
		id, err := s.Add(do(func(c *Ctx, _ *TaskData) error {
			jerr = c.JoinTasks(cp(nil, y[:20], NoTask), cp(nil, y[10:], NoTask))
			return jerr
		}))
		must(t, err)
		must(t, s.Wait(id))
		must(t, jerr)
		g := gate(t, s)
		_, err = s.Add(cp(nil, y, g))
		must(t, err)
		id, err = s.Add(do(func(c *Ctx, _ *TaskData) error {
			return c.JoinTasks(cp(nil, y[:4], NoTask), cp(nil, make([]byte, 4), NoTask))
		}))
		must(t, err)
		if err := s.Wait(id); err != nil {
			t.Fatalf("a JoinTasks half (not checked: part of its caller's kernel): %v", err)
		}
	})
}

// TestRaceCheckEpochWrap: the marks' epoch wrapping around (after 2^32
// checks) changes no verdict: ordered pairs stay accepted, unordered ones
// refused, across the wrap.
func TestRaceCheckEpochWrap(t *testing.T) {
	e := rvSched(t, Config{Workers: 1})
	s := e.s
	r := s.raceChecker()
	r.mu.Lock()
	r.epoch = ^uint32(0) - 3
	r.mu.Unlock()
	epoch := func() uint32 {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.epoch
	}
	y := make([]byte, 16)
	g := gate(t, s)
	prev := g
	for i := range 8 {
		id, err := s.Add(cp(nil, y, prev)) // a chain: each after the last
		if err != nil {
			t.Fatalf("chain %d (epoch %d): %v", i, epoch(), err)
		}
		if _, err := s.Add(cp(nil, y[i:i+1], g)); !errors.Is(err, ErrRace) {
			t.Fatalf("unordered %d (epoch %d): %v, want ErrRace", i, epoch(), err)
		}
		prev = id
	}
	if ep := epoch(); ep > 100 {
		t.Fatalf("epoch %d: did not wrap", ep)
	}
	must(t, s.Run(g))
	must(t, s.Wait(prev))
}
