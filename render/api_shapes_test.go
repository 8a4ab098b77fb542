package render

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/sched"
)

// within runs f on its own goroutine and fails the test if it has not
// returned within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%s: panic: %v", what, p)
		}
	case <-time.After(d):
		t.Fatalf("%s: did not return within %v", what, d)
	}
}

// QuantizeDepth's documented special values: +Inf above every finite
// depth, NaN at MaxDepth.
func TestQuantizeDepthSpecialValues(t *testing.T) {
	inf := QuantizeDepth(float32(math.Inf(1)))
	if inf != 0xff0000 || QuantizeDepth(math.MaxFloat32) >= inf {
		t.Errorf("QuantizeDepth(+Inf) = %#x, MaxFloat32 -> %#x", inf, QuantizeDepth(math.MaxFloat32))
	}
	if got := QuantizeDepth(float32(math.NaN())); got != MaxDepth {
		t.Errorf("QuantizeDepth(NaN) = %#x, want MaxDepth", got)
	}
}

// CommandRecorder.Commands(i) is nil for a range the last frame did not
// have, not an older, larger frame's list.
func TestCommandRecorderCommandsOfLastFrameOnly(t *testing.T) {
	s, m := newSched(t, 1)
	r := newRenderer(t, s, Config{Ranges: 8, MinRange: 1})
	sc := newScene(t, 1, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	rec := &CommandRecorder{}
	var first RecordStats
	within(t, 10*time.Second, "frames", func() {
		sc.fill(t, rng, []int{400})
		sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
		must(t, err)
		first, err = r.Record(m, sorted, rec)
		must(t, err)
		// A smaller frame: fewer ranges.
		sc.fill(t, rng, []int{3})
		sorted, err = r.MergeSort(m, sc.ctxs, sc.reg)
		must(t, err)
		st, err := r.Record(m, sorted, rec)
		must(t, err)
		if first.Ranges <= st.Ranges {
			t.Fatalf("ranges %d then %d", first.Ranges, st.Ranges)
		}
		for i := st.Ranges; i < first.Ranges; i++ {
			if c := rec.Commands(i); c != nil {
				t.Errorf("Commands(%d) after a frame of %d ranges: %d bytes of an older frame's commands, want nil", i, st.Ranges, len(c))
				break
			}
		}
	})
}

// Two Renderers, one per frame in flight, run from two kernels at once on
// one scheduler (the package doc's pipelined frame loop), over the same
// contexts: both sorts match the reference and both recordings are whole.
func TestTwoRenderersFramesInFlight(t *testing.T) {
	kreg := sched.NewRegistry()
	type job struct {
		r    *Renderer
		ctxs []*RenderContext
		reg  *Registry
		want []ref
	}
	const kFrame sched.KernelID = 1
	must(t, kreg.Register(kFrame, sched.Kernel{Name: "frame", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		j := d.Data.(*job)
		for range 20 {
			sorted, err := j.r.MergeSort(c, j.ctxs, j.reg)
			if err != nil {
				return err
			}
			if sorted.Len() != len(j.want) {
				return fmt.Errorf("sorted %d, want %d", sorted.Len(), len(j.want))
			}
			for i, w := range j.want {
				ci, off := sorted.Source(i)
				if ci != w.ctx || off != w.off {
					return fmt.Errorf("packet %d from %d/%d, want %d/%d", i, ci, off, w.ctx, w.off)
				}
			}
			rec := &CountingRecorder{Registry: j.reg}
			st, err := j.r.Record(c, sorted, rec)
			if err != nil {
				return err
			}
			if st.Draws+st.Jobs != sorted.Stats().Draws+sorted.Stats().Jobs {
				return fmt.Errorf("recorded %+v of %+v", st, sorted.Stats())
			}
		}
		return nil
	}}))
	s, err := sched.New(sched.Config{Kernels: kreg, Workers: 3})
	must(t, err)
	defer s.Close()
	m, err := s.RegisterThread("main")
	must(t, err)
	sc := newScene(t, 5, 1<<18)
	sc.states, sc.jobs = 30, 30
	sc.fill(t, rand.New(rand.NewPCG(9, 9)), counts(5, 1500))
	want := reference(sc.ctxs)
	jobs := make([]*job, 2)
	for i := range jobs {
		r, err := New(s, Config{MergeGrain: 64, Ranges: 7, MinRange: 8, SplitLayers: i == 1})
		must(t, err)
		jobs[i] = &job{r: r, ctxs: sc.ctxs, reg: sc.reg, want: want}
	}
	within(t, 60*time.Second, "two renderers", func() {
		root, err := m.Create(&sched.Task{})
		must(t, err)
		for _, j := range jobs {
			task := sched.Task{Kernel: kFrame, Parent: root}
			task.Data.Data = j
			_, err := m.Add(&task)
			must(t, err)
		}
		must(t, m.Run(root))
		if err := m.Wait(root); err != nil {
			t.Error(err)
		}
	})
}

// A Recorder that panics in a range recorded by a worker: Record returns
// an error, EndFrame hears of it, and the next frame records normally.
type panicAtDraw struct {
	CountingRecorder
	n        int
	mu       sync.Mutex
	endFrame error
}

func (p *panicAtDraw) Draw(w int, d *DrawPacket) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	if n == 50 {
		panic("recorder bug at draw 50")
	}
	p.CountingRecorder.Draw(w, d)
}

func (p *panicAtDraw) EndFrame(err error) error {
	p.endFrame = err
	return nil
}

func TestRecordRecorderPanicOnWorker(t *testing.T) {
	s, m := newSched(t, 3)
	r := newRenderer(t, s, Config{Ranges: 16, MinRange: 4})
	sc := newScene(t, 3, 1<<18)
	sc.fill(t, rand.New(rand.NewPCG(3, 1)), counts(3, 400))
	within(t, 20*time.Second, "record with panic", func() {
		sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
		must(t, err)
		rec := &panicAtDraw{}
		_, err = r.Record(m, sorted, rec)
		if err == nil || !strings.Contains(err.Error(), "recorder bug") {
			t.Errorf("Record after a panicking Draw: %v", err)
		}
		if rec.endFrame == nil {
			t.Error("EndFrame was told nil after a range panicked")
		}
		var ok CountingRecorder
		if _, err := r.Record(m, sorted, &ok); err != nil {
			t.Errorf("next Record: %v", err)
		}
	})
}

// Every packet kind and context shape in one frame, with a context listed
// twice, empty contexts, a zero-capacity context and a zero-value context.
func TestMergeSortOddContextLists(t *testing.T) {
	s, m := newSched(t, 2)
	r := newRenderer(t, s, Config{MergeGrain: 1, MergeTasks: 5, Ranges: 3, MinRange: 1})
	sc := newScene(t, 2, 1<<16)
	sc.states, sc.jobs, sc.apps = 100, 100, 100
	sc.fill(t, rand.New(rand.NewPCG(5, 7)), []int{300, 0})
	zero, err := NewContext(0)
	must(t, err)
	if err := zero.Draw(&DrawPacket{}); !errors.Is(err, ErrOverflow) {
		t.Errorf("draw into a 0-byte context: %v", err)
	}
	var zv RenderContext
	if err := zv.Draw(&DrawPacket{}); !errors.Is(err, ErrOverflow) {
		t.Errorf("draw into a zero-value context: %v", err)
	}
	ctxs := []*RenderContext{sc.ctxs[0], sc.ctxs[1], zero, sc.ctxs[0], &zv}
	within(t, 10*time.Second, "odd lists", func() {
		sorted, err := r.MergeSort(m, ctxs, sc.reg)
		var fe *FrameError
		if !errors.As(err, &fe) || fe.Stats.Overflow != 2 {
			t.Fatalf("MergeSort: %v", err)
		}
		checkAgainst(t, sorted, reference(ctxs))
		rec := &CountingRecorder{Registry: sc.reg}
		if _, err := r.Record(m, sorted, rec); err != nil {
			t.Fatal(err)
		}
	})
}

// Steady-state MergeSort + Record of the same shape of frame allocate
// nothing, including frames that alternate between sizes.
func TestFramesOfAlternatingSizesZeroAllocs(t *testing.T) {
	s, m := newSched(t, 1)
	r := newRenderer(t, s, Config{MergeGrain: 256, MinRange: 16})
	big := newScene(t, 4, 1<<18)
	big.states, big.jobs = 20, 20
	big.fill(t, rand.New(rand.NewPCG(1, 1)), counts(4, 2000))
	small := newScene(t, 2, 1<<14)
	small.fill(t, rand.New(rand.NewPCG(2, 2)), counts(2, 30))
	rec := &CommandRecorder{}
	frame := func(sc *scene) {
		sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
		if err != nil {
			panic(err)
		}
		if _, err := r.Record(m, sorted, rec); err != nil {
			panic(err)
		}
	}
	frame(big)
	frame(small)
	frame(big)
	if a := testing.AllocsPerRun(20, func() { frame(big); frame(small) }); a != 0 {
		t.Errorf("%v allocations per pair of frames", a)
	}
}

// Loaded bytes: known types with a 0-byte or oversized payload are
// ErrPacketSize; a type in the reserved range 4..FirstAppType-1 is skipped
// as unknown.
func TestMergeSortLoadedShapes(t *testing.T) {
	s, m := newSched(t, 1)
	r := newRenderer(t, s, Config{})
	reg := NewRegistry()
	p, _ := reg.AddPipeline(Pipeline{})
	mesh, _ := reg.AddMesh(Mesh{Vertices: 3})
	w := evstream.NewWriter(evstream.NewBuffer(4096))
	must(t, w.Append(TypeDraw, nil))
	must(t, w.Append(TypeState, make([]byte, stateSize+8)))
	must(t, w.Append(7, []byte{1, 2, 3})) // reserved render type: skipped
	d := DrawPacket{Pipeline: p, Mesh: mesh, VertexCount: 3, InstanceCount: 1}
	must(t, evstream.Put(w, TypeDraw, &d))
	c, _ := NewContext(4096)
	must(t, c.Load(w.Bytes()))
	within(t, 10*time.Second, "load shapes", func() {
		sorted, err := r.MergeSort(m, []*RenderContext{c}, reg)
		var fe *FrameError
		if !errors.As(err, &fe) || fe.Stats.Invalid != 2 || fe.Stats.Unknown != 1 || sorted.Len() != 1 {
			t.Fatalf("%v %+v", err, sorted.Stats())
		}
		if !errors.Is(err, ErrPacketSize) {
			t.Errorf("%v", err)
		}
	})
}
