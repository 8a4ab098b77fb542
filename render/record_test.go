package render

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/evstream"
)

// logRecorder wraps CountingRecorder and logs every SetState per range, to
// check the state re-issued at range starts.
type logRecorder struct {
	CountingRecorder
	mu     sync.Mutex
	states map[int][]StatePacket // range -> states in call order
	cur    []int
}

func (l *logRecorder) BeginFrame(f FrameInfo) error {
	l.states = map[int][]StatePacket{}
	l.cur = make([]int, f.Threads)
	return l.CountingRecorder.BeginFrame(f)
}

func (l *logRecorder) Begin(w int, rg Range) error {
	l.cur[w] = rg.Index
	return l.CountingRecorder.Begin(w, rg)
}

func (l *logRecorder) SetState(w int, s *StatePacket) {
	l.mu.Lock()
	l.states[l.cur[w]] = append(l.states[l.cur[w]], *s)
	l.mu.Unlock()
	l.CountingRecorder.SetState(w, s)
}

func TestRecord(t *testing.T) {
	for _, workers := range []int{1, 3} {
		s, m := newSched(t, workers)
		for _, cfg := range []Config{{}, {Ranges: 5, MinRange: 1}, {Ranges: 64, MinRange: 7}, {Ranges: 4, MinRange: 2, SplitLayers: true}} {
			r := newRenderer(t, s, cfg)
			rng := rand.New(rand.NewPCG(uint64(workers), 12))
			for trial := range 20 {
				t.Run(fmt.Sprintf("w%d/%+v/%d", workers, cfg, trial), func(t *testing.T) {
					nctx := 1 + rng.IntN(6)
					sc := newScene(t, nctx, 1<<16)
					sc.states, sc.jobs, sc.apps = 30, 20, 10
					n := make([]int, nctx)
					for i := range n {
						n[i] = rng.IntN(300)
					}
					sc.fill(t, rng, n)
					sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
					must(t, err)
					rec := &logRecorder{CountingRecorder: CountingRecorder{Registry: sc.reg, Keep: true}}
					st, err := r.Record(m, sorted, rec)
					must(t, err)
					checkRecord(t, r, sorted, rec, st)
				})
			}
		}
	}
}

func checkRecord(t *testing.T, r *Renderer, sorted *Sorted, rec *logRecorder, st RecordStats) {
	t.Helper()
	n := sorted.Len()
	f, _ := rec.Frame()
	if f.Packets != n || f.Ranges != st.Ranges || (n > 0) != (st.Ranges > 0) {
		t.Fatalf("frame %+v stats %+v for %d packets", f, st, n)
	}
	split := r.cfg.SplitLayers
	if !split && (st.Ranges > r.cfg.Ranges || (st.Ranges > 1 && n/st.Ranges < r.cfg.MinRange)) {
		t.Fatalf("%d ranges for %d packets (max %d, min size %d)", st.Ranges, n, r.cfg.Ranges, r.cfg.MinRange)
	}
	layers := map[uint8]bool{}
	for i := range n {
		layers[sorted.Key(i).Decode().Layer] = true
	}
	if split && st.Ranges < len(layers) {
		t.Fatalf("%d ranges for %d layers", st.Ranges, len(layers))
	}
	// The ranges tile the stream in order, and each range saw exactly its
	// packets (after the re-issued states) in sorted order.
	next := 0
	cur := [NumStates]int{-1, -1}
	for i, rc := range rec.Ranges() {
		rg := rc.Range
		if rg.Index != i || rg.First != next || !rc.Ended {
			t.Fatalf("range %d: %+v after %d", i, rc, next)
		}
		if sz := n / st.Ranges; !split && rg.Count != sz && rg.Count != sz+1 {
			t.Fatalf("range %d has %d packets, want %d or %d", i, rg.Count, sz, sz+1)
		}
		if rg.Count == 0 || rg.Layer != sorted.Key(rg.First).Decode().Layer ||
			(split && sorted.Key(rg.First+rg.Count-1).Decode().Layer != rg.Layer) {
			t.Fatalf("range %+v: layers %d..%d", rg, sorted.Key(rg.First).Decode().Layer, sorted.Key(rg.First+rg.Count-1).Decode().Layer)
		}
		next += rg.Count
		// The state in effect at the range start, in stream order.
		var inherited []int
		for _, j := range cur {
			if j >= 0 {
				inherited = append(inherited, j)
			}
		}
		slices.Sort(inherited)
		states := rec.states[i]
		if len(states) < len(inherited) {
			t.Fatalf("range %d: %d states, %d inherited", i, len(states), len(inherited))
		}
		want := make([]SortKey, 0, rg.Count)
		for k, j := range inherited {
			if states[k] != *sorted.State(j) {
				t.Fatalf("range %d starts with state %+v, want %+v", i, states[k], *sorted.State(j))
			}
			want = append(want, sorted.Key(j))
		}
		for j := rg.First; j < rg.First+rg.Count; j++ {
			want = append(want, sorted.Key(j))
			if s := sorted.State(j); s != nil {
				cur[s.Kind] = j
			}
		}
		if !slices.Equal(rc.Keys, want) {
			t.Fatalf("range %d saw keys %v, want %v", i, rc.Keys, want)
		}
	}
	if next != n {
		t.Fatalf("ranges cover %d of %d packets", next, n)
	}
	tot := rec.Totals()
	stats := sorted.Stats()
	if tot != st || st.Draws != stats.Draws || st.Jobs != stats.Jobs || st.States < stats.States {
		t.Fatalf("recorder saw %+v, Record reports %+v, sorted %+v", tot, st, stats)
	}
	if st.Draws > 0 && (st.PipelineBinds == 0 || st.PipelineBinds > st.Draws || st.MeshBinds > st.Draws) {
		t.Fatalf("binds %+v", st)
	}
}

// TestRecordBinds: a frame of one pipeline and one mesh, sorted, binds each
// once per range.
func TestRecordBinds(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{Ranges: 4, MinRange: 10})
	sc := newScene(t, 4, 1<<20)
	rng := rand.New(rand.NewPCG(2, 2))
	for i, c := range sc.ctxs {
		for j := range 100 {
			d := sc.draw(rng)
			d.Pipeline, d.Mesh = sc.pipes[0], sc.meshes[0]
			d.Key = enc(t, Key{Pipeline: uint16(d.Pipeline), Depth: uint32(1000 - j*4 - i)})
			must(t, c.Draw(&d))
		}
	}
	sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
	must(t, err)
	var rec CountingRecorder
	st, err := r.Record(m, sorted, &rec)
	must(t, err)
	if st != (RecordStats{Ranges: 4, Draws: 400, PipelineBinds: 4, MeshBinds: 4}) {
		t.Fatalf("%+v", st)
	}
	for i := 1; i < sorted.Len(); i++ {
		if sorted.Draw(i-1).Key > sorted.Draw(i).Key {
			t.Fatal("not front to back")
		}
	}
}

// failRecorder fails at a chosen call.
type failRecorder struct {
	CountingRecorder
	at     string
	range_ int
	ended  error
}

var errTest = errors.New("test failure")

func (f *failRecorder) BeginFrame(fi FrameInfo) error {
	if f.at == "BeginFrame" {
		return errTest
	}
	return f.CountingRecorder.BeginFrame(fi)
}

func (f *failRecorder) Begin(w int, rg Range) error {
	if f.at == "Begin" && rg.Index == f.range_ {
		return errTest
	}
	return f.CountingRecorder.Begin(w, rg)
}

func (f *failRecorder) Draw(w int, d *DrawPacket) {
	if f.at == "panic" {
		panic("recorder bug")
	}
	f.CountingRecorder.Draw(w, d)
}

func (f *failRecorder) End(w int, rg Range) error {
	err := f.CountingRecorder.End(w, rg)
	if f.at == "End" && rg.Index == f.range_ {
		return errTest
	}
	return err
}

func (f *failRecorder) EndFrame(err error) error {
	f.ended = err
	if f.at == "EndFrame" {
		return errTest
	}
	return f.CountingRecorder.EndFrame(err)
}

func TestRecordErrors(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{Ranges: 3, MinRange: 1})
	sc := newScene(t, 2, 1<<16)
	sc.fill(t, rand.New(rand.NewPCG(3, 3)), counts(2, 50))
	sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
	must(t, err)
	for _, at := range []string{"BeginFrame", "Begin", "End", "EndFrame", "panic"} {
		t.Run(at, func(t *testing.T) {
			rec := &failRecorder{at: at, range_: 1}
			_, err := r.Record(m, sorted, rec)
			if err == nil {
				t.Fatal("no error")
			}
			if at != "panic" && !errors.Is(err, errTest) {
				t.Fatalf("error %v does not wrap the recorder's", err)
			}
			if (at == "Begin" || at == "End") && !strings.Contains(err.Error(), "range 1") {
				t.Fatalf("error %v does not name the range", err)
			}
			if at != "BeginFrame" && at != "EndFrame" && rec.ended == nil {
				t.Fatal("EndFrame was not told about the failure")
			}
		})
	}
	// The renderer is still usable after every failure.
	var rec CountingRecorder
	_, err = r.Record(m, sorted, &rec)
	must(t, err)
	// A panic in a range recorded inline on the caller (one range) is an
	// error too.
	r1 := newRenderer(t, s, Config{Ranges: 1})
	if _, err := r1.Record(m, sorted, &failRecorder{at: "panic"}); err == nil || !strings.Contains(err.Error(), "recorder bug") {
		t.Fatalf("inline panic: %v", err)
	}
}

// TestCountingRecorderCatches checks the validating recorder itself: each
// protocol violation is reported.
func TestCountingRecorderCatches(t *testing.T) {
	reg := NewRegistry()
	p, _ := reg.AddPipeline(Pipeline{})
	mesh, _ := reg.AddMesh(Mesh{Vertices: 3})
	good := DrawPacket{Key: 5, Pipeline: p, Mesh: mesh, VertexCount: 3, InstanceCount: 1}
	cases := map[string]func(r *CountingRecorder) error{
		"draw outside range": func(r *CountingRecorder) error { r.Draw(0, &good); return r.EndFrame(nil) },
		"no pipeline bound": func(r *CountingRecorder) error {
			r.Begin(0, Range{})
			r.BindMesh(0, mesh)
			r.Draw(0, &good)
			return r.End(0, Range{})
		},
		"wrong mesh bound": func(r *CountingRecorder) error {
			r.Begin(0, Range{})
			r.BindPipeline(0, p)
			r.BindMesh(0, mesh+1)
			r.Draw(0, &good)
			return r.End(0, Range{})
		},
		"unsorted": func(r *CountingRecorder) error {
			r.Begin(0, Range{})
			r.BindPipeline(0, p)
			r.BindMesh(0, mesh)
			r.Draw(0, &good)
			d := good
			d.Key = 1
			r.Draw(0, &d)
			return r.End(0, Range{})
		},
		"unknown handle": func(r *CountingRecorder) error {
			r.Begin(0, Range{})
			d := good
			d.Pipeline = 9
			r.BindPipeline(0, 9)
			r.BindMesh(0, mesh)
			r.Draw(0, &d)
			return r.End(0, Range{})
		},
		"begun twice": func(r *CountingRecorder) error { r.Begin(0, Range{}); r.End(0, Range{}); return r.Begin(1, Range{}) },
		"worker busy": func(r *CountingRecorder) error { r.Begin(0, Range{}); return r.Begin(0, Range{Index: 1}) },
		"never begun": func(r *CountingRecorder) error { r.Begin(0, Range{}); r.End(0, Range{}); return r.EndFrame(nil) },
		"wrong end":   func(r *CountingRecorder) error { r.Begin(0, Range{}); return r.End(1, Range{}) },
		"bad worker":  func(r *CountingRecorder) error { return r.Begin(5, Range{}) },
		"bad range":   func(r *CountingRecorder) error { return r.Begin(0, Range{Index: 2}) },
		"bad frame":   func(r *CountingRecorder) error { return r.BeginFrame(FrameInfo{Threads: 0}) },
		"draw on bad worker": func(r *CountingRecorder) error {
			r.Begin(0, Range{})
			r.Draw(7, &good)
			r.End(0, Range{})
			r.Begin(1, Range{Index: 1})
			r.End(1, Range{Index: 1})
			return r.EndFrame(nil)
		},
	}
	for name, f := range cases {
		r := &CountingRecorder{Registry: reg}
		must(t, r.BeginFrame(FrameInfo{Ranges: 2, Threads: 2}))
		if err := f(r); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}

func TestCommandRecorder(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{Ranges: 2, MinRange: 1})
	sc := newScene(t, 2, 1<<16)
	sc.states, sc.jobs = 50, 50
	sc.fill(t, rand.New(rand.NewPCG(4, 4)), counts(2, 200))
	sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
	must(t, err)
	rec := &CommandRecorder{}
	for i := range 16 {
		rec.ViewProj[i] = float32(i + 1)
	}
	st, err := r.Record(m, sorted, rec)
	must(t, err)
	var got RecordStats
	got.Ranges = st.Ranges
	j := 0
	for i := range st.Ranges {
		rd := evstream.NewReader(rec.Commands(i))
		for rd.Next() {
			switch rd.Type() {
			case CmdBindPipeline:
				got.PipelineBinds++
			case CmdBindMesh:
				got.MeshBinds++
			case CmdSetState:
				got.States++
			case CmdJob:
				got.Jobs++
			case CmdDraw:
				got.Draws++
				a, err := evstream.View[CmdDrawArgs](rd.Payload())
				must(t, err)
				for sorted.Draw(j) == nil {
					j++
				}
				d := sorted.Draw(j)
				j++
				var want [16]float32
				mul4(&want, &rec.ViewProj, &d.Model)
				if a.MVP != want || a.Color != d.Color || a.VertexCount != d.VertexCount || a.Instance != d.Instance {
					t.Fatalf("draw command %+v for %+v", *a, *d)
				}
			}
		}
		must(t, rd.Err())
	}
	if got != st {
		t.Fatalf("commands %+v, stats %+v", got, st)
	}
}

func TestMul4(t *testing.T) {
	id := [16]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}
	tr := id
	tr[12], tr[13], tr[14] = 1, 2, 3 // translation
	var o [16]float32
	mul4(&o, &tr, &tr)
	if o[12] != 2 || o[13] != 4 || o[14] != 6 || o[0] != 1 || o[15] != 1 {
		t.Fatalf("%v", o)
	}
	mul4(&o, &id, &tr)
	if o != tr {
		t.Fatalf("%v", o)
	}
}

func TestRecordZeroAllocs(t *testing.T) {
	s, m := newSched(t, 0)
	r := newRenderer(t, s, Config{MinRange: 16})
	sc := newScene(t, 4, 1<<20)
	sc.states, sc.jobs = 10, 10
	sc.fill(t, rand.New(rand.NewPCG(5, 5)), counts(4, 2000))
	sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
	must(t, err)
	for _, rec := range []Recorder{&CountingRecorder{}, &CommandRecorder{}} {
		_, err := r.Record(m, sorted, rec) // warm up
		must(t, err)
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := r.Record(m, sorted, rec); err != nil {
				panic(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("%T: %v allocs per frame", rec, allocs)
		}
	}
}
