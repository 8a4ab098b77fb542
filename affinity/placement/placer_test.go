package placement

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// world simulates devices with known costs: the Placer sees only the
// RunEvents it would get from a scheduler and executors.
type world struct {
	p        *Placer
	k        sched.Kernel
	id       sched.KernelID
	cpu, gpu func(n uint32) time.Duration
	cpu1     func(n uint32) time.Duration // a task run unsplit (one core); nil: cpu
	root     sched.TaskID
	pieces   int // CPU tasks report this many pieces (1: unsplit)
	// coSlow > 0 makes both parts of a split task take coSlow times
	// longer: devices that share cores slow each other down.
	coSlow float64
	// gpuBusy sums the simulated GPU time of the tasks and slices run;
	// oneCore says whether the last task ran unsplit at the Placer's
	// request.
	gpuBusy time.Duration
	oneCore bool
}

func newWorld(opts Options) *world {
	if opts.CPUThreads == 0 {
		opts.CPUThreads = 1 // effective items = items
	}
	if opts.ExploreBudget == 0 {
		// The tests of the model, slices, re-probes and co-execution
		// run short sequences that a budget would leave unexplored;
		// those of the budget set it.
		opts.ExploreBudget = -1
	}
	return &world{
		p:      New(opts),
		id:     7,
		k:      sched.Kernel{Name: "sim", Kind: sched.Streaming, Grain: 1024, GPU: &bind.Binding{}},
		pieces: 1,
	}
}

func lin(lat time.Duration, perItem float64) func(uint32) time.Duration {
	return func(n uint32) time.Duration { return lat + time.Duration(perItem*float64(n)) }
}

// run places one task of n items and completes it at once with the
// simulated durations (events in the future are fine: the Placer only
// subtracts times). It returns where it was placed and the split.
func (w *world) run(n uint32) (sched.Affinity, uint32) {
	var d sched.TaskData
	d.Elements, d.Begin, d.End = n, 0, n
	where, split := w.p.Place(w.id, &w.k, &d)
	now := placerClock()
	w.root++
	oneCore := d.Grain >= n // the Placer asked for one core: the scheduler does not split it
	w.oneCore = oneCore
	slow := func(d time.Duration) time.Duration {
		if split > 0 && w.coSlow > 0 {
			return time.Duration(w.coSlow * float64(d))
		}
		return d
	}
	cpuPart := func(b, e uint32) {
		dur := slow(w.cpu(e - b))
		if oneCore && w.cpu1 != nil {
			dur = w.cpu1(e - b)
		}
		if oneCore || w.pieces <= 1 || e-b < uint32(w.pieces) {
			ev := sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: w.root, Kernel: w.id, Begin: b, End: e, Start: now, Stop: now + int64(dur)}
			w.p.TaskRan(&ev)
			return
		}
		// Pieces on parallel threads: each takes the whole duration.
		step := (e - b) / uint32(w.pieces)
		for i := 0; i < w.pieces; i++ {
			pb, pe := b+uint32(i)*step, b+uint32(i+1)*step
			if i == w.pieces-1 {
				pe = e
			}
			ev := sched.RunEvent{Thread: i, Where: sched.AnyWorker, Task: w.root<<8 | sched.TaskID(i+1), Parent: w.root,
				Kernel: w.id, Begin: pb, End: pe, Start: now, Stop: now + int64(dur)}
			w.p.TaskRan(&ev)
		}
	}
	gpuPart := func(b, e uint32) {
		dur := slow(w.gpu(e - b))
		w.gpuBusy += dur
		ev := sched.RunEvent{Thread: -1, Where: sched.GPU, Task: w.root, Kernel: w.id, Begin: b, End: e, Start: now, Stop: now + int64(dur)}
		w.p.TaskRan(&ev)
	}
	switch {
	case split > 0:
		gpuPart(0, split)
		cpuPart(split, n)
	case where == sched.GPU:
		gpuPart(0, n)
	default:
		cpuPart(0, n)
	}
	return where, split
}

func faster(w *world, n uint32) sched.Affinity {
	if w.gpu(n) < w.cpu(n) {
		return sched.GPU
	}
	return sched.AnyWorker
}

func TestPlacerLearnsCrossover(t *testing.T) {
	w := newWorld(Options{NoCoExec: true})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	sizes := []uint32{64, 1000, 4000, 30000, 100000, 1 << 20}
	r := rand.New(rand.NewPCG(1, 2))
	explore := 0
	for range 20 {
		for _, i := range r.Perm(len(sizes)) {
			w.run(sizes[i])
		}
	}
	snap := w.p.Snapshot()
	for _, d := range snap.Decisions {
		if d.Reason == "explore" {
			explore++
		}
	}
	// Two devices, six size classes, three tries each at most.
	if explore > 36 || explore == 0 {
		t.Fatalf("%d exploration decisions", explore)
	}
	wrong := 0
	for range 20 {
		for _, i := range r.Perm(len(sizes)) {
			if where, _ := w.run(sizes[i]); where != faster(w, sizes[i]) {
				wrong++
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of 120 decisions went to the slower device\n%s", wrong, dump(w.p))
	}
	km, _ := w.p.Snapshot().Model(w.id)
	for _, c := range []struct {
		dev     string
		lat     time.Duration
		perItem float64
	}{{"cpu", 2 * time.Microsecond, 10}, {"gpu", 100 * time.Microsecond, 1}} {
		dm, ok := km.Device(c.dev)
		// The measured times include the test's own time between Place and
		// the event (~0.1 us, more under the race detector).
		slack := 300.0
		if raceEnabled {
			slack = 3000
		}
		if !ok || math.Abs(float64(dm.Latency-c.lat)) > 0.1*float64(c.lat)+slack || math.Abs(dm.PerItem-c.perItem) > 0.05*c.perItem {
			t.Errorf("%s model: latency %v, %.3f ns/item; want %v, %v", c.dev, dm.Latency, dm.PerItem, c.lat, c.perItem)
		}
		if p := dm.Predict(1000); p <= 0 {
			t.Errorf("%s Predict(1000) = %v", c.dev, p)
		}
	}
}

func dump(p *Placer) string {
	var b bytes.Buffer
	p.Snapshot().WriteTo(&b)
	return b.String()
}

// warm explores every size class of sizes (the GPU by slices first:
// a warm-up and up to three slices).
func (w *world) warm(sizes ...uint32) {
	for range 2*w.p.opts.Explore + 6 {
		for _, n := range sizes {
			w.run(n)
		}
	}
}

// TestPlacerBacklog: with the GPU busy, a task it would win goes to the
// CPU workers (earliest expected finish, not fastest device).
func TestPlacerBacklog(t *testing.T) {
	w := newWorld(Options{NoCoExec: true, ReprobeEvery: -1, TrackEvery: 1})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.warm(1<<20, 30000)
	var d sched.TaskData
	d.End = 1 << 20
	// Three big GPU tasks placed and not finished: ~3.3 ms queued.
	for range 3 {
		if where, _ := w.p.Place(w.id, &w.k, &d); where != sched.GPU {
			t.Fatalf("big task placed on %v", where)
		}
	}
	if got := w.p.Snapshot().Outstanding["gpu"]; got < 3*time.Millisecond {
		t.Fatalf("outstanding GPU work %v", got)
	}
	// 30000 items: GPU 130 us, CPU 302 us; behind 3 ms of GPU work the
	// CPU finishes first.
	d.End = 30000
	if where, _ := w.p.Place(w.id, &w.k, &d); where != sched.AnyWorker {
		t.Fatalf("with a busy GPU the 30000-item task went to %v\n%s", where, dump(w.p))
	}
}

// TestPlacerAdapts: when the GPU slows down 20x the decay lets the model
// notice within a few tasks.
func TestPlacerAdapts(t *testing.T) {
	w := newWorld(Options{NoCoExec: true, TrackEvery: 1})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.warm(1000, 1<<20)
	if where, _ := w.run(1 << 20); where != sched.GPU {
		t.Fatal("not on the GPU before the change")
	}
	w.gpu = lin(100*time.Microsecond, 20)
	switched := -1
	for i := range 30 {
		if where, _ := w.run(1 << 20); where == sched.AnyWorker {
			switched = i
			break
		}
	}
	if switched < 0 || switched > 10 {
		t.Fatalf("switched to the CPU after %d tasks\n%s", switched, dump(w.p))
	}
}

// TestPlacerProbes: a device that became faster is found by re-probing.
func TestPlacerProbes(t *testing.T) {
	w := newWorld(Options{NoCoExec: true, ReprobeEvery: 5})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 15)
	w.warm(1000, 1<<20)
	if where, _ := w.run(1 << 20); where != sched.AnyWorker {
		t.Fatal("not on the CPU before the change")
	}
	w.gpu = lin(100*time.Microsecond, 1)
	gpu := 0
	for range 40 {
		if where, _ := w.run(1 << 20); where == sched.GPU {
			gpu++
		}
	}
	if gpu < 20 {
		t.Fatalf("only %d of 40 tasks went to the GPU after it became 10x faster\n%s", gpu, dump(w.p))
	}
}

// TestPlacerCoExec: a large task is split in proportion to the devices'
// predicted rates so that both parts finish together.
func TestPlacerCoExec(t *testing.T) {
	w := newWorld(Options{ReprobeEvery: -1})
	// The CPU is twice as fast per item: it should take 2/3.
	w.cpu, w.gpu = lin(10*time.Microsecond, 2), lin(10*time.Microsecond, 4)
	w.pieces = 2
	w.warm(1<<20, 300) // explorations never split
	where, split := w.run(1 << 20)
	if where != sched.GPU || split == 0 {
		t.Fatalf("no co-execution: %v %d\n%s", where, split, dump(w.p))
	}
	if got := float64(split) / (1 << 20); math.Abs(got-1.0/3) > 0.02 {
		t.Fatalf("GPU share %.3f, want 1/3", got)
	}
	snap := w.p.Snapshot()
	d := snap.Decisions[len(snap.Decisions)-1]
	if d.Reason != "coexec" || !d.Done || d.Measured <= 0 || d.Measured > 2*d.PredictedFinish {
		t.Fatalf("co-execution decision %+v", d)
	}
	km, _ := snap.Model(w.id)
	if km.CoExecSamples < 1 || math.Abs(km.CoExecEfficiency-1) > 0.1 {
		t.Fatalf("co-execution efficiency %.3f after %d samples", km.CoExecEfficiency, km.CoExecSamples)
	}
	// Small tasks are not split.
	if _, split := w.run(300); split != 0 {
		t.Fatal("300 items split")
	}
	// When the parts slow each other down (shared cores: each part of a
	// split task takes 3x as long as alone), the measured efficiency
	// stops co-execution.
	w.coSlow = 3
	for range 10 {
		w.run(1 << 20)
	}
	if _, split := w.run(1 << 20); split != 0 {
		km, _ := w.p.Snapshot().Model(w.id)
		t.Fatalf("still co-executing with efficiency %.2f\n%s", km.CoExecEfficiency, dump(w.p))
	}
	// SharedCores never co-executes.
	w2 := newWorld(Options{SharedCores: true})
	w2.cpu, w2.gpu = w.cpu, w.gpu
	w2.coSlow = 3
	w2.warm(1<<20, 300)
	if _, split := w2.run(1 << 20); split != 0 {
		t.Fatal("co-execution with SharedCores")
	}
}

// TestPlacerPieces: CPU tasks split into pieces are attributed by their
// parent, also when two tasks of the same kernel and range interleave.
func TestPlacerPieces(t *testing.T) {
	w := newWorld(Options{NoCoExec: true, ReprobeEvery: -1, TrackEvery: 1})
	w.cpu, w.gpu = lin(time.Microsecond, 1), lin(100*time.Microsecond, 5)
	w.warm(4096)
	var d sched.TaskData
	d.End = 4096
	a, _ := w.p.Place(w.id, &w.k, &d)
	b, _ := w.p.Place(w.id, &w.k, &d)
	if a != sched.AnyWorker || b != sched.AnyWorker {
		t.Fatal("not on the CPU")
	}
	now := sched.Nanotime()
	ev := func(parent sched.TaskID, b, e uint32, dur time.Duration) {
		w.p.TaskRan(&sched.RunEvent{Thread: 1, Where: sched.AnyWorker, Parent: parent, Kernel: w.id, Begin: b, End: e, Start: now, Stop: now + int64(dur)})
	}
	ev(100, 0, 2048, time.Microsecond) // task A's first piece binds the oldest entry
	ev(200, 2048, 4096, time.Microsecond)
	ev(200, 0, 2048, time.Microsecond)
	ev(300, 0, 4096, time.Microsecond) // an untracked task: matches nothing
	ev(100, 2048, 4096, time.Microsecond)
	snap := w.p.Snapshot()
	for _, d := range snap.Decisions[len(snap.Decisions)-2:] {
		if !d.Done || d.Failed {
			t.Fatalf("decision %+v not completed", d)
		}
	}
	if snap.Outstanding["cpu"] != 0 || snap.Outstanding["gpu"] != 0 {
		t.Fatalf("outstanding %v", snap.Outstanding)
	}
	if km := w.p.model(w.id); km.inflight.Load() != 0 {
		t.Fatalf("%d entries in flight", km.inflight.Load())
	}
}

// TestPlacerTrackEvery: clear calls are tracked one time in TrackEvery,
// close ones always.
func TestPlacerTrackEvery(t *testing.T) {
	w := newWorld(Options{NoCoExec: true, ReprobeEvery: -1})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.warm(100, 10000)
	before := len(w.p.Snapshot().Decisions)
	for range 80 {
		w.run(100) // CPU 3 us, GPU 100 us: clear
	}
	if got := len(w.p.Snapshot().Decisions) - before; got != 10 {
		t.Fatalf("%d of 80 clear placements tracked, want 10", got)
	}
	before += 10
	for range 20 {
		w.run(10000) // CPU 102 us, GPU 110 us: close
	}
	if got := len(w.p.Snapshot().Decisions) - before; got != 20 {
		t.Fatalf("%d of 20 close placements tracked, want 20", got)
	}
}

// TestPlacerStale: on a stepped clock (the ten placements at one instant:
// on real time with StaleAfter 1 ms, a loaded machine under -race spread
// them over more than 1 ms, and the later ones expired the earlier).
func TestPlacerStale(t *testing.T) {
	var now atomic.Int64
	now.Store(sched.Nanotime())
	placerClock = now.Load
	defer func() { placerClock = sched.Nanotime }()
	w := newWorld(Options{StaleAfter: time.Millisecond, MaxInFlight: 4, TrackEvery: 1})
	w.cpu, w.gpu = lin(time.Microsecond, 1), lin(100*time.Microsecond, 5)
	var d sched.TaskData
	d.End = 100
	for range 10 { // never completed; the ring of 4 evicts the oldest
		w.p.Place(w.id, &w.k, &d)
	}
	if km := w.p.model(w.id); km.inflight.Load() != 4 {
		t.Fatalf("%d in flight with MaxInFlight 4", km.inflight.Load())
	}
	now.Add(int64(2 * time.Millisecond))
	w.p.Place(w.id, &w.k, &d) // expires the old ones
	if km := w.p.model(w.id); km.inflight.Load() != 1 {
		t.Fatalf("%d in flight after expiry", km.inflight.Load())
	}
	snap := w.p.Snapshot()
	failed := 0
	for _, d := range snap.Decisions {
		if d.Failed {
			failed++
		}
	}
	if failed != 10 {
		t.Fatalf("%d dropped decisions, want 10", failed)
	}
}

func TestPlacerCPUOnly(t *testing.T) {
	p := New(Options{})
	k := sched.Kernel{Name: "cpu-only", Kind: sched.Streaming}
	var d sched.TaskData
	d.End = 1000
	for range 5 {
		if where, split := p.Place(3, &k, &d); where != sched.AnyWorker || split != 0 {
			t.Fatalf("kernel without GPU binding placed on %v/%d", where, split)
		}
	}
	if s := p.Snapshot(); s.Placed != 0 || len(s.Kernels) != 0 {
		t.Fatalf("CPU-only placements tracked: %+v", s)
	}
	if where, _ := p.Place(3, nil, &d); where != sched.AnyWorker {
		t.Fatal("nil kernel")
	}
}

// TestPlaceAllocs: Place and TaskRan allocate nothing once a kernel has
// been seen; BenchmarkPlace measures their cost.
func TestPlaceAllocs(t *testing.T) {
	w := newWorld(Options{})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.pieces = 2
	w.warm(64, 1<<20, 100000)
	sizes := []uint32{64, 1 << 20, 100000}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		w.run(sizes[i%len(sizes)])
		i++
	})
	if allocs != 0 {
		t.Fatalf("Place+TaskRan: %v allocations per task", allocs)
	}
}

func BenchmarkPlace(b *testing.B) {
	w := newWorld(Options{})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.warm(64, 1<<20, 100000)
	var d sched.TaskData
	d.End = 100000
	b.Run("place", func(b *testing.B) {
		// Placements never complete here: the ring evicts the oldest.
		p := New(Options{CPUThreads: 1, TrackEvery: 1})
		w2 := *w
		w2.p = p
		w2.warm(64, 1<<20, 100000)
		b.ReportAllocs()
		for b.Loop() {
			p.Place(w.id, &w.k, &d)
		}
	})
	b.Run("place-clear-untracked", func(b *testing.B) {
		var small sched.TaskData
		small.End = 64
		b.ReportAllocs()
		for b.Loop() {
			w.p.Place(w.id, &w.k, &small)
		}
	})
	b.Run("place+complete", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w.run(100000)
		}
	})
	b.Run("observe-untracked", func(b *testing.B) {
		// The cost every CPU kernel invocation pays with a Placer as observer.
		ev := sched.RunEvent{Kernel: 99, Where: sched.AnyWorker}
		b.ReportAllocs()
		for b.Loop() {
			w.p.TaskRan(&ev)
		}
	})
}

func TestPlacerConcurrent(t *testing.T) {
	w := newWorld(Options{})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			k := w.k
			for range 2000 {
				n := uint32(1 + r.IntN(1<<20))
				var d sched.TaskData
				d.End = n
				where, split := w.p.Place(w.id, &k, &d)
				now := sched.Nanotime()
				if split > 0 {
					w.p.TaskRan(&sched.RunEvent{Thread: -1, Where: sched.GPU, Kernel: w.id, End: split, Start: now, Stop: now + int64(w.gpu(split))})
					w.p.TaskRan(&sched.RunEvent{Thread: g, Where: sched.AnyWorker, Kernel: w.id, Begin: split, End: n, Start: now, Stop: now + int64(w.cpu(n-split))})
					continue
				}
				w.p.TaskRan(&sched.RunEvent{Thread: -1, Where: where, Kernel: w.id, End: n, Start: now, Stop: now + 1000})
				if g == 0 && r.IntN(100) == 0 {
					w.p.Snapshot()
				}
			}
		})
	}
	wg.Wait()
	s := w.p.Snapshot()
	if s.Outstanding["cpu"] != 0 || s.Outstanding["gpu"] != 0 {
		t.Fatalf("outstanding work left: %v", s.Outstanding)
	}
}

func TestPlacerSaveLoad(t *testing.T) {
	w := newWorld(Options{})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.warm(64, 4000, 1<<20)
	var buf bytes.Buffer
	if err := w.p.Save(&buf); err != nil {
		t.Fatal(err)
	}
	saved := buf.String()
	p2 := New(Options{CPUThreads: 1})
	if err := p2.Load(strings.NewReader(saved)); err != nil {
		t.Fatal(err)
	}
	want, _ := w.p.Snapshot().Model(w.id)
	got, ok := p2.Snapshot().Model(w.id)
	if !ok || got.Name != "sim" || len(got.Devices) != 2 {
		t.Fatalf("loaded model %+v", got)
	}
	for i := range want.Devices {
		a, b := want.Devices[i], got.Devices[i]
		if a.Device != b.Device || a.Latency != b.Latency || a.PerItem != b.PerItem || a.Samples != b.Samples || !reflect.DeepEqual(a.Classes, b.Classes) {
			t.Fatalf("device %d: saved %+v, loaded %+v", i, a, b)
		}
	}
	var again bytes.Buffer
	if err := p2.Save(&again); err != nil || again.String() != saved {
		t.Fatalf("second save differs:\n%s\nvs\n%s", again.String(), saved)
	}
	// Warm start: no exploration for the saved size classes.
	w2 := newWorld(Options{})
	w2.p = p2
	w2.cpu, w2.gpu = w.cpu, w.gpu
	for _, n := range []uint32{64, 4000, 1 << 20} {
		if where, _ := w2.run(n); where != faster(w2, n) {
			t.Fatalf("warm start: %d items went to %v\n%s\n%s", n, where, dump(p2), saved)
		}
	}
	for _, d := range p2.Snapshot().Decisions {
		if d.Reason != "model" {
			t.Fatalf("warm start explored: %+v", d)
		}
	}
	// Another kernel under the same ID starts from scratch.
	other := sched.Kernel{Name: "other", Kind: sched.Streaming, GPU: &bind.Binding{}}
	p3 := New(Options{})
	if err := p3.Load(strings.NewReader(saved)); err != nil {
		t.Fatal(err)
	}
	var d sched.TaskData
	d.End = 64
	p3.Place(w.id, &other, &d)
	if s := p3.Snapshot(); s.Decisions[0].Reason != "explore" || s.Kernels[0].Name != "other" {
		t.Fatalf("renamed kernel kept the saved model: %+v", s.Decisions[0])
	}
}

func TestPlacerLoadErrors(t *testing.T) {
	var m map[string]any
	good := `{"version":1,"cpu_threads":2,"kernels":[{"id":3,"name":"k","devices":{"cpu":{"latency_ns":1,"per_item_ns":2,"samples":3,"classes":{"5":{"samples":3,"estimate_ns":40,"items":20,"recent":[40,41,39]}}}},"coexec_efficiency":1,"coexec_samples":0}]}`
	if err := json.Unmarshal([]byte(good), &m); err != nil {
		t.Fatal(err)
	}
	p := New(Options{})
	if err := p.Load(strings.NewReader(good)); err != nil {
		t.Fatalf("good file: %v", err)
	}
	if err := New(Options{}).Load(strings.NewReader(strings.Replace(good, `"recent":[40,41,39]`, `"recent":[40,41,39],"inflation":1.25`, 1))); err != nil {
		t.Fatalf("good file with an inflation: %v", err)
	}
	for _, bad := range []string{
		`{`,
		`{"version":2,"kernels":[]}`,
		`{"version":1,"extra":1}`,
		strings.Replace(good, `"latency_ns":1`, `"latency_ns":-1`, 1),
		strings.Replace(good, `"cpu":`, `"tpu":`, 1),
		strings.Replace(good, `"5":`, `"40":`, 1),
		strings.Replace(good, `"samples":3,"estimate`, `"samples":2,"estimate`, 1), // two samples, three values
		strings.Replace(good, `"estimate_ns":40`, `"estimate_ns":-40`, 1),
		strings.Replace(good, `"coexec_efficiency":1`, `"coexec_efficiency":-2`, 1),
		strings.Replace(good, `"recent":[40,41,39]`, `"recent":[40,41,39],"inflation":7`, 1),
		strings.Replace(good, `"recent":[40,41,39]`, `"recent":[40,41,39],"inflation":-1`, 1),
		strings.Replace(good, `}]}`, `},{"id":3,"name":"k","devices":{}}]}`, 1),
	} {
		p := New(Options{})
		if err := p.Load(strings.NewReader(bad)); !errors.Is(err, ErrBadModel) {
			t.Errorf("Load(%.60s...) = %v, want ErrBadModel", bad, err)
		}
		if len(p.Snapshot().Kernels) != 0 {
			t.Errorf("a failed Load changed the model")
		}
	}
}

func TestObservers(t *testing.T) {
	var a, b countObs
	o := Observers(&a, nil, &b)
	o.TaskRan(&sched.RunEvent{})
	if a.n != 1 || b.n != 1 {
		t.Fatal("Observers did not call both")
	}
}

type countObs struct{ n int }

func (c *countObs) TaskRan(*sched.RunEvent) { c.n++ }
