package sched

import (
	"errors"
	"strings"
	"testing"
)

// Kernels of the race tests: "rw" reads x (per item) and a Whole table,
// writes y (per item), 4-byte elements.
const (
	kRaceRW KernelID = 1
	kRaceWr KernelID = 2 // writes one Whole stream of any stride
)

func raceSched(t testing.TB, workers int, gpu Executor) *Scheduler {
	reg := NewRegistry()
	must(t, reg.Register(kRaceRW, Kernel{Name: "rw", Kind: Streaming,
		In:  []StreamSpec{{Name: "x", Stride: 4}, {Name: "lut", Stride: 4, Rate: Whole}},
		Out: []StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(*Ctx, *TaskData) error { return nil }}))
	must(t, reg.Register(kRaceWr, Kernel{Name: "fill", Kind: Streaming,
		Out: []StreamSpec{{Name: "dst", Rate: Whole}},
		CPU: func(*Ctx, *TaskData) error { return nil }}))
	s, err := New(Config{Workers: workers, Kernels: reg, CheckRaces: true})
	must(t, err)
	if gpu != nil {
		must(t, s.AttachExecutor(ExecGPU, gpu))
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rwTask(x, lut, y []float32, dep TaskID) *Task {
	t := &Task{Kernel: kRaceRW, Dependency: dep}
	t.Data.Elements = uint32(len(x))
	t.Data.In[0], t.Data.In[1], t.Data.Out[0] = StreamOf(x), StreamOf(lut), StreamOf(y)
	return t
}

// gate returns a held empty task: what depends on it stays live, unstarted.
func gate(t testing.TB, s *Scheduler) TaskID {
	g, err := s.Create(&Task{})
	must(t, err)
	t.Cleanup(func() { s.Run(g) })
	return g
}

func TestRaceHostWriteWrite(t *testing.T) {
	s := raceSched(t, 1, nil)
	g := gate(t, s)
	x, lut, y := make([]float32, 64), make([]float32, 4), make([]float32, 64)
	a, err := s.Add(rwTask(x[:32], lut, y[:32], g))
	must(t, err)
	// The other half of x and y, the same table: no hazard.
	_, err = s.Add(rwTask(x[32:], lut, y[32:], g))
	must(t, err)
	// y[16:48] overlaps both.
	_, err = s.Add(rwTask(x[16:48], lut, y[16:48], g))
	var re *RaceError
	if !errors.Is(err, ErrRace) || !errors.As(err, &re) {
		t.Fatalf("overlapping writes: err %v, want ErrRace", err)
	}
	if re.Other != a || re.End-re.Begin != 64 || re.Buffer != 0 {
		t.Fatalf("race %+v", re)
	}
	if !strings.Contains(err.Error(), "out[0] y") || !strings.Contains(err.Error(), "\"rw\"") {
		t.Fatalf("error text %q", err)
	}
	// Ordered after a: no hazard.
	_, err = s.Add(rwTask(x[:32], lut, y[:32], a))
	must(t, err)
	// A reader of y[0:32] that is ordered with nothing: hazard with a.
	_, err = s.Add(rwTask(y[:32], lut, make([]float32, 32), g))
	if !errors.Is(err, ErrRace) {
		t.Fatalf("read of a's output: err %v", err)
	}
	// The table written while read: hazard.
	wr := &Task{Kernel: kRaceWr, Dependency: g}
	wr.Data.Out[0] = StreamOf(lut)
	if _, err = s.Add(wr); !errors.Is(err, ErrRace) {
		t.Fatalf("write of a read table: err %v", err)
	}
}

// TestRaceOrderedByJoinAndParent: a join over writers orders its
// dependents after them; a child is ordered before its parent's
// dependents but not with its parent's own work.
func TestRaceOrderedByJoinAndParent(t *testing.T) {
	s := raceSched(t, 1, nil)
	g := gate(t, s)
	x, lut, y := make([]float32, 64), make([]float32, 4), make([]float32, 64)
	join, err := s.Create(&Task{})
	must(t, err)
	for i := 0; i < 64; i += 16 {
		w := rwTask(x[i:i+16], lut, y[i:i+16], g)
		w.Parent = join
		_, err := s.Add(w)
		must(t, err)
	}
	must(t, s.Run(join))
	// Reads all of y after the join.
	_, err = s.Add(rwTask(y, lut, x, join))
	must(t, err)
	// A child writing its parent's output: hazard (the parent's kernel
	// runs alongside its children); a dependent of the parent reading it:
	// ordered after the child.
	x2, y2 := make([]float32, 8), make([]float32, 8)
	p, err := s.Add(rwTask(x2, lut, y2, g))
	must(t, err)
	c := rwTask(x2, lut, y2, NoTask)
	c.Parent = p
	if _, err = s.Add(c); !errors.Is(err, ErrRace) {
		t.Fatalf("child writing its parent's output: err %v", err)
	}
	c = rwTask(x2[:4], lut, make([]float32, 4), g)
	c.Parent = p
	_, err = s.Add(c)
	must(t, err)
	c = rwTask(y2, lut, x2, p) // writes x2 that the child reads: ordered
	_, err = s.Add(c)
	must(t, err)
}

// TestRaceHeldChecksAtRun: a task made with Create is checked when Run;
// a refused Run fails the task and its dependents.
func TestRaceHeldChecksAtRun(t *testing.T) {
	s := raceSched(t, 1, nil)
	g := gate(t, s)
	x, lut, y := make([]float32, 8), make([]float32, 4), make([]float32, 8)
	h, err := s.Create(rwTask(x, lut, y, NoTask))
	must(t, err)
	_, err = s.Add(rwTask(x, lut, y, g)) // h is held: not compared yet
	must(t, err)
	dep, err := s.Add(&Task{Dependency: h})
	must(t, err)
	if err := s.Run(h); !errors.Is(err, ErrRace) {
		t.Fatalf("Run: err %v, want ErrRace", err)
	}
	if err := s.Wait(h); !errors.Is(err, ErrRace) {
		t.Fatalf("Wait(h): %v", err)
	}
	if err := s.Wait(dep); !errors.Is(err, ErrDepFailed) {
		t.Fatalf("Wait(dep): %v", err)
	}
}

// TestRaceSplitAndFinished: a split task is not compared with its pieces,
// and a task that finished races nothing added after it.
func TestRaceSplitAndFinished(t *testing.T) {
	s := raceSched(t, 2, nil)
	x, lut, y := make([]float32, 1<<16), make([]float32, 4), make([]float32, 1<<16)
	for range 4 {
		tk := rwTask(x, lut, y, NoTask)
		tk.Data.Grain = 256
		id, err := s.Add(tk)
		must(t, err)
		must(t, s.Wait(id))
	}
}

// TestRaceDevice: device buffers by (Buffer, Offset, Count*Stride), a GPU
// task against a CPU task, a stream with host bytes and a buffer.
func TestRaceDevice(t *testing.T) {
	s := raceSched(t, 1, goExec{})
	g := gate(t, s)
	buf := func(b BufferID, off uint64, n uint32) Stream {
		return Stream{Buffer: b, Offset: off, Stride: 4, Count: n}
	}
	tk := func(a Affinity, in, out Stream) *Task {
		t := &Task{Kernel: kRaceRW, Affinity: a, Dependency: g}
		t.Data.Elements = in.Count
		t.Data.In[0], t.Data.In[1], t.Data.Out[0] = in, buf(9, 0, 1), out
		return t
	}
	_, err := s.Add(tk(GPU, buf(1, 0, 64), buf(2, 0, 64)))
	must(t, err)
	_, err = s.Add(tk(SPU, buf(1, 0, 64), buf(2, 256, 64))) // SPU not attached
	if !errors.Is(err, ErrNoExecutor) {
		t.Fatalf("err %v", err)
	}
	_, err = s.Add(tk(Auto, buf(1, 0, 64), buf(2, 256, 64))) // other half: fine
	must(t, err)
	_, err = s.Add(tk(AnyWorker, buf(3, 0, 64), buf(2, 128, 64)))
	if !errors.Is(err, ErrRace) {
		t.Fatalf("err %v", err)
	}
	var re *RaceError
	errors.As(err, &re)
	if re.Buffer != 2 || re.Begin != 128 || re.End != 256 {
		t.Fatalf("race %+v", re)
	}
	t.Logf("example: %v", err)
	// Host mirror and buffer: the host side races a host writer.
	host := make([]float32, 128)
	both := StreamOf(host[:64])
	both.Buffer, both.Offset = 5, 0
	_, err = s.Add(tk(GPU, both, buf(6, 0, 64)))
	must(t, err)
	_, err = s.Add(tk(AnyWorker, buf(7, 0, 64), StreamOf(host[60:124])))
	if !errors.Is(err, ErrRace) {
		t.Fatalf("err %v", err)
	}
	t.Logf("example: %v", err)
	_, err = s.Add(tk(AnyWorker, buf(7, 0, 64), buf(5, 128, 64)))
	if !errors.Is(err, ErrRace) {
		t.Fatalf("err %v", err)
	}
}

// goExec completes each job at once, from a goroutine of its own.
type goExec struct{}

func (goExec) Enqueue(j Job) { go j.Done(nil) }
func (goExec) Close() error  { return nil }

// BenchmarkStreamTask: a streaming task (64 elements, one piece) added
// and waited for, with Config.CheckRaces off and on, and the empty task
// of BenchmarkEmptyTask with it on.
func BenchmarkStreamTask(b *testing.B) {
	for _, check := range []bool{false, true} {
		name := "off"
		if check {
			name = "on"
		}
		b.Run("stream/"+name, func(b *testing.B) {
			s, m := raceBenchSched(b, check)
			_ = s
			const batch = 256
			x, y := make([]float32, 64*batch), make([]float32, 64*batch)
			task := Task{Kernel: kCompute}
			task.Data.Elements = 64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; {
				root, _ := m.Create(&Task{})
				task.Parent = root
				for j := 0; j < batch && i < b.N; j++ {
					task.Data.In[0] = StreamOf(x[j*64 : j*64+64])
					task.Data.Out[0] = StreamOf(y[j*64 : j*64+64])
					if _, err := m.Add(&task); err != nil {
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

func raceBenchSched(b *testing.B, check bool) (*Scheduler, *Ctx) {
	b.Setenv(EnvCheckRaces, "0") // "off" measures the unchecked path
	reg := NewRegistry()
	must(b, reg.Register(kCompute, Kernel{Name: "compute", Kind: Streaming, Grain: 4096,
		In: []StreamSpec{{Name: "x", Stride: 4}}, Out: []StreamSpec{{Name: "y", Stride: 4}},
		CPU: func(c *Ctx, d *TaskData) error {
			computeRange(View[float32](d.In[0]), View[float32](d.Out[0]), int(d.Begin), int(d.End))
			return nil
		}}))
	s, err := New(Config{Kernels: reg, CheckRaces: check})
	must(b, err)
	m, err := s.RegisterThread("main")
	must(b, err)
	b.Cleanup(func() { s.Close() })
	return s, m
}

// TestRaceFrameShapes: the crowd's frame, pipelined two deep, with the
// check on: per frame, sample (split, a Whole clip table read by all)
// writes locals, local-to-model (Auto) writes model, skinning in groups on
// the GPU (children of a join, each writing its own part of a device
// buffer and reading the model), a Reduce gather of the vertices on the
// SPU after the join; frames alternate between two sets of buffers, and a
// frame waits for the one two back, which used the same set. No false
// alarm; then a frame that forgets to wait is refused.
func TestRaceFrameShapes(t *testing.T) {
	const (
		kSample, kL2M, kSkin, kGather KernelID = 20, 21, 22, 23
		chars, group, bones                    = 1024, 128, 16
	)
	nop := func(*Ctx, *TaskData) error { return nil }
	reg := NewRegistry()
	must(t, reg.Register(kSample, Kernel{Name: "sample", Kind: Streaming, Grain: 64,
		In:  []StreamSpec{{Name: "time", Stride: 4}, {Name: "clips", Rate: Whole}},
		Out: []StreamSpec{{Name: "locals", Stride: 64 * bones}}, CPU: nop}))
	must(t, reg.Register(kL2M, Kernel{Name: "local_to_model", Kind: Streaming, Grain: 64,
		In:  []StreamSpec{{Name: "locals", Stride: 64 * bones}, {Name: "parents", Rate: Whole}},
		Out: []StreamSpec{{Name: "model", Stride: 64 * bones}}, CPU: nop}))
	must(t, reg.Register(kSkin, Kernel{Name: "skin", Kind: Streaming,
		In:  []StreamSpec{{Name: "model", Stride: 64 * bones}},
		Out: []StreamSpec{{Name: "verts", Stride: 256}}, CPU: nop}))
	must(t, reg.Register(kGather, Kernel{Name: "gather", Kind: Reduce, Factor: group,
		In:  []StreamSpec{{Name: "verts", Stride: 256}},
		Out: []StreamSpec{{Name: "bounds", Stride: 32}}, CPU: nop}))
	s, err := New(Config{Kernels: reg, CheckRaces: true})
	must(t, err)
	defer s.Close()
	must(t, s.AttachExecutor(ExecGPU, goExec{}))
	must(t, s.AttachExecutor(ExecSPU, goExec{}))

	clips, parents := make([]byte, 4096), make([]byte, 4*bones)
	type set struct{ time, locals, model, bounds []byte }
	var sets [2]set
	for i := range sets {
		sets[i] = set{make([]byte, 4*chars), make([]byte, 64*bones*chars), make([]byte, 64*bones*chars), make([]byte, 32*chars/group)}
	}
	frame := func(f int, wait TaskID) (TaskID, error) {
		b := &sets[f%2]
		vbuf := BufferID(1 + f%2)
		root, err := s.Create(&Task{Dependency: wait})
		must(t, err)
		defer s.Run(root)
		tk := Task{Kernel: kSample, Parent: root, Dependency: wait}
		tk.Data.Elements = chars
		tk.Data.In[0], tk.Data.In[1] = Stream{Bytes: b.time, Stride: 4, Count: chars}, Stream{Bytes: clips, Stride: 1, Count: 4096}
		tk.Data.Out[0] = Stream{Bytes: b.locals, Stride: 64 * bones, Count: chars}
		sample, err := s.Add(&tk)
		if err != nil {
			return root, err
		}
		tk = Task{Kernel: kL2M, Affinity: Auto, Parent: root, Dependency: sample}
		tk.Data.Elements = chars
		tk.Data.In[0], tk.Data.In[1] = Stream{Bytes: b.locals, Stride: 64 * bones, Count: chars}, Stream{Bytes: parents, Stride: 1, Count: 4 * bones}
		tk.Data.Out[0] = Stream{Bytes: b.model, Stride: 64 * bones, Count: chars}
		l2m, err := s.Add(&tk)
		if err != nil {
			return root, err
		}
		join, err := s.Create(&Task{Parent: root, Dependency: l2m})
		must(t, err)
		for g := 0; g < chars; g += group {
			tk = Task{Kernel: kSkin, Affinity: GPU, Parent: join}
			tk.Data.Elements = group
			tk.Data.In[0] = Stream{Bytes: b.model[g*64*bones : (g+group)*64*bones], Stride: 64 * bones, Count: group}
			tk.Data.Out[0] = Stream{Buffer: vbuf, Offset: uint64(g * 256), Stride: 256, Count: group}
			// The skin groups are children of the join, which waits for
			// l2m; they must themselves wait for l2m's model.
			tk.Dependency = l2m
			if _, err := s.Add(&tk); err != nil {
				return root, err
			}
		}
		must(t, s.Run(join))
		tk = Task{Kernel: kGather, Affinity: SPU, Parent: root, Dependency: join}
		tk.Data.Elements = chars / group
		tk.Data.In[0] = Stream{Buffer: vbuf, Stride: 256, Count: chars}
		tk.Data.Out[0] = Stream{Bytes: b.bounds, Stride: 32, Count: chars / group}
		_, err = s.Add(&tk)
		return root, err
	}
	var roots []TaskID
	for f := range 40 {
		wait := NoTask
		if f >= 2 {
			wait = roots[f-2]
		}
		root, err := frame(f, wait)
		if err != nil {
			t.Fatalf("frame %d: %v", f, err)
		}
		roots = append(roots, root)
	}
	for _, r := range roots {
		must(t, s.Wait(r))
	}
	// Frame 40 behind a gate; frame 42 uses its buffers without waiting
	// for it: refused.
	g := gate(t, s)
	if _, err := frame(40, g); err != nil {
		t.Fatalf("frame 40 after a gate: %v", err)
	}
	if _, err := frame(42, NoTask); !errors.Is(err, ErrRace) {
		t.Fatalf("frame 42 racing frame 40: %v", err)
	} else {
		t.Logf("refused: %v", err)
	}
}

// TestRaceOrderAddedLater: a pair is compared when the later of the two
// starts, against the orders as they are then. Y depends on a held join
// P; X writes what Y reads; Z, a child of P that depends on X, orders X
// before Y, but only once Z is added. Y added before Z is refused; Y made
// with Create and Run after Z is not, nor is Y added after Z.
func TestRaceOrderAddedLater(t *testing.T) {
	s := raceSched(t, 1, nil)
	g := gate(t, s)
	lut := make([]float32, 4)
	// setup adds X (behind the gate) writing a fresh y, and a held P.
	setup := func() (xid, p TaskID, y []float32) {
		y = make([]float32, 16)
		xid, err := s.Add(rwTask(make([]float32, 16), lut, y, g))
		must(t, err)
		p, err = s.Create(&Task{})
		must(t, err)
		t.Cleanup(func() { s.Run(p) })
		return xid, p, y
	}
	addZ := func(xid, p TaskID) {
		_, err := s.Add(&Task{Parent: p, Dependency: xid})
		must(t, err)
	}
	reader := func(p TaskID, y []float32) *Task { return rwTask(y, lut, make([]float32, 16), p) }

	xid, p, y := setup()
	if _, err := s.Add(reader(p, y)); !errors.Is(err, ErrRace) {
		t.Fatalf("Y added before the order exists: %v, want ErrRace", err)
	}
	addZ(xid, p)
	_, err := s.Add(reader(p, y))
	must(t, err)

	xid, p, y = setup()
	yid, err := s.Create(reader(p, y))
	must(t, err)
	addZ(xid, p)
	must(t, s.Run(yid))
}

// TestCheckRacesFromEnvironment: VKJOBS_CHECK_RACES turns the check on
// for a Config that leaves it unset, never off for one that sets it, and a
// value that is not a boolean fails New, naming the variable.
func TestCheckRacesFromEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  string
		set  bool
		want bool
	}{{"", false, false}, {"1", false, true}, {"true", false, true}, {"0", false, false}, {"0", true, true}, {"", true, true}} {
		t.Setenv(EnvCheckRaces, c.env)
		s, err := New(Config{Workers: 1, PoolSize: 64, CheckRaces: c.set})
		must(t, err)
		if got := s.ChecksRaces(); got != c.want {
			t.Errorf("%s=%q, CheckRaces %v: checks %v, want %v", EnvCheckRaces, c.env, c.set, got, c.want)
		}
		s.Close()
	}
	t.Setenv(EnvCheckRaces, "yes please")
	if s, err := New(Config{}); err == nil || !strings.Contains(err.Error(), EnvCheckRaces) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("%s=\"yes please\": New error %v, want one naming the variable", EnvCheckRaces, err)
	}
}
