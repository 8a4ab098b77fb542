package placement

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// returnsWithin runs f on its own goroutine and fails the test if it
// panics or has not returned after d.
func returnsWithin(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case r := <-done:
		if r != nil {
			t.Fatalf("%s panicked: %v", what, r)
		}
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestNewWithHugeBounds: Options that mean "as many as you like"
// (math.MaxInt in-flight placements or decisions kept) give a working
// Placer, not a hang or an allocation the machine cannot make.
func TestNewWithHugeBounds(t *testing.T) {
	for _, o := range []Options{
		{MaxInFlight: math.MaxInt},
		{MaxInFlight: 1<<62 + 1},
		{History: math.MaxInt},
	} {
		var p *Placer
		returnsWithin(t, 5*time.Second, fmt.Sprintf("New(%+v)", o), func() { p = New(o) })
		w := newWorld(o)
		w.p = p
		w.cpu, w.gpu = lin(time.Microsecond, 1), lin(50*time.Microsecond, 0.1)
		w.warm(64, 1<<16)
	}
}

// TestPlaceWithHugeSchedules: ReprobeEvery and TrackEvery are ints; a
// large one (re-probe "never", track "rarely") must not make Place panic
// (every Auto task would then fail with ErrPlacerPanic).
func TestPlaceWithHugeSchedules(t *testing.T) {
	for _, o := range []Options{
		{ReprobeEvery: 1 << 32},
		{TrackEvery: 1 << 32},
		{ReprobeEvery: 1 << 40, TrackEvery: 1 << 33},
	} {
		w := newWorld(o)
		w.cpu, w.gpu = lin(time.Microsecond, 1), lin(50*time.Microsecond, 0.1)
		returnsWithin(t, 5*time.Second, fmt.Sprintf("placing with %+v", o), func() {
			for range 50 {
				w.run(1000)
				w.run(1 << 20)
			}
		})
	}
}

// TestOptionsNaN: a NaN option (a division by zero in the program's
// configuration) takes the default rather than poisoning the model.
func TestOptionsNaN(t *testing.T) {
	nan := math.NaN()
	w := newWorld(Options{Decay: nan, CoExecGain: nan, ExploreBudget: nan})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.warm(64, 1<<20)
	for _, n := range []uint32{64, 1 << 20} {
		if where, _ := w.run(n); where != faster(w, n) {
			t.Fatalf("NaN options: %d items went to %v\n%s", n, where, dump(w.p))
		}
	}
	var buf bytes.Buffer
	if err := w.p.Save(&buf); err != nil {
		t.Fatalf("Save after NaN options: %v", err)
	}
}

// TestLoadRejectsNonPositiveTimes: a saved class's estimate and samples
// are measured times, at least 1 ns (add clamps them so). A file with a
// zero estimate or sample is malformed: loaded, it divides by zero in the
// fit, the model turns NaN and Save fails from then on.
func TestLoadRejectsNonPositiveTimes(t *testing.T) {
	good := `{"version":1,"cpu_threads":1,"kernels":[{"id":7,"name":"sim","devices":{` +
		`"cpu":{"latency_ns":1000,"per_item_ns":1,"samples":3,"classes":{"11":{"samples":3,"estimate_ns":2000,"items":1000,"recent":[2000,2000,2000]}}},` +
		`"gpu":{"latency_ns":50000,"per_item_ns":0.1,"samples":3,"classes":{"11":{"samples":3,"estimate_ns":50100,"items":1000,"recent":[50100,50100,50100]}}}` +
		`},"coexec_efficiency":1,"coexec_samples":0}]}`
	if err := New(Options{}).Load(strings.NewReader(good)); err != nil {
		t.Fatalf("good file: %v", err)
	}
	for _, bad := range []string{
		strings.Replace(good, `"estimate_ns":2000`, `"estimate_ns":0`, 1),
		strings.Replace(good, `"recent":[2000,2000,2000]`, `"recent":[2000,0,2000]`, 1),
	} {
		p := New(Options{CPUThreads: 1, ExploreBudget: -1})
		err := p.Load(strings.NewReader(bad))
		if errors.Is(err, ErrBadModel) {
			continue
		}
		if err != nil {
			t.Fatalf("Load: %v, want ErrBadModel", err)
		}
		// Accepted: show what it does to the model.
		w := newWorld(Options{})
		w.p = p
		w.cpu, w.gpu = lin(time.Microsecond, 1), lin(50*time.Microsecond, 0.1)
		for _, n := range []uint32{1000, 1000, 1000, 1000, 1 << 16, 1 << 16, 1 << 16, 1 << 16} {
			w.run(n)
		}
		var buf bytes.Buffer
		t.Errorf("Load accepted a zero time (%.40s...); Save afterwards: %v", bad[strings.Index(bad, `"cpu"`):], p.Save(&buf))
	}
}

// TestLoadRejectsTrailingData: a saved model followed by anything else
// (two files concatenated, a truncated rewrite) is malformed.
func TestLoadRejectsTrailingData(t *testing.T) {
	for _, bad := range []string{
		`{"version":1,"kernels":[]} {"version":1,"kernels":[]}`,
		`{"version":1,"kernels":[]}garbage`,
	} {
		if err := New(Options{}).Load(strings.NewReader(bad)); !errors.Is(err, ErrBadModel) {
			t.Errorf("Load(%q) = %v, want ErrBadModel", bad, err)
		}
	}
	if err := New(Options{}).Load(strings.NewReader("{\"version\":1,\"kernels\":[]}\n\n")); err != nil {
		t.Errorf("trailing white space: %v", err)
	}
}

// TestAffinityEveryThreadRoundTrips: every thread index prints and parses
// back, as text and inside JSON.
func TestAffinityEveryThreadRoundTrips(t *testing.T) {
	for i := range 1 << 16 {
		a := Affinity(sched.OnThread(i))
		b, err := ParseAffinity(a.String())
		if err != nil || b != a {
			t.Fatalf("thread %d: %q parsed as %v, %v", i, a, b, err)
		}
	}
	type cfg struct{ Where []Affinity }
	in := cfg{Where: []Affinity{Affinity(sched.Auto), Affinity(sched.SPU), Affinity(sched.OnThread(65535))}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out cfg
	if err := json.Unmarshal(data, &out); err != nil || fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("JSON %s read back as %v, %v", data, out, err)
	}
	if err := json.Unmarshal([]byte(`{"Where":["tpu"]}`), &out); err == nil || !strings.Contains(err.Error(), "tpu") {
		t.Fatalf("JSON with an unknown affinity: %v", err)
	}
}

// TestAutoSPUCloseDuringWork: a scheduler with the SPU executor and the
// Placer closed while Auto tasks are in flight: every task completes
// (run or failed), Close returns, and the Placer's Snapshot and Save
// still work with nothing queued against a device that is gone.
func TestAutoSPUCloseDuringWork(t *testing.T) {
	reg := sched.NewRegistry()
	must(t, kernels.Register(reg))
	x, err := spu.New(spu.Options{LocalStore: 16 << 10, Units: 2})
	must(t, err)
	p := New(Options{SPU: x, TrackEvery: 1, ExploreBudget: -1, StaleAfter: time.Second})
	s, err := sched.New(sched.Config{Kernels: reg, Placer: p, Observer: p})
	must(t, err)
	must(t, s.AttachExecutor(sched.ExecSPU, x))
	p.Attach(s)
	r := rng(9)
	var ids []sched.TaskID
	for i := range 60 {
		task, _ := saxpyTask(r, 500<<(i%5))
		task.Affinity = sched.Auto
		id, err := s.Add(&task)
		must(t, err)
		ids = append(ids, id)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with Auto tasks in flight")
	}
	for _, id := range ids {
		if err := s.Wait(id); err != nil && !errors.Is(err, sched.ErrClosed) && !errors.Is(err, spu.ErrClosed) {
			t.Fatalf("task %v: %v", id, err)
		}
	}
	snap := p.Snapshot()
	if snap.Outstanding["spu"] != 0 || snap.Outstanding["cpu"] != 0 {
		t.Fatalf("work still predicted queued after Close: %v", snap.Outstanding)
	}
	var buf bytes.Buffer
	if err := p.Save(&buf); err != nil {
		t.Fatal(err)
	}
}

// TestPlacerConcurrentSnapshotSaveLoad: Snapshot, WriteTo, Save and Load
// racing Place and TaskRan (the documentation: all methods are safe for
// concurrent use).
func TestPlacerConcurrentSnapshotSaveLoad(t *testing.T) {
	w := newWorld(Options{TrackEvery: 1})
	w.cpu, w.gpu = lin(2*time.Microsecond, 10), lin(100*time.Microsecond, 1)
	w.warm(64, 1<<20)
	var saved bytes.Buffer
	must(t, w.p.Save(&saved))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		k := w.k
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var d sched.TaskData
			d.End = uint32(64 + i%5000)
			where, split := w.p.Place(w.id, &k, &d)
			now := sched.Nanotime()
			if split == 0 {
				w.p.TaskRan(&sched.RunEvent{Thread: -1, Where: where, Kernel: w.id, End: d.End, Start: now, Stop: now + 1000})
			}
		}
	})
	for range 50 {
		snap := w.p.Snapshot()
		if _, err := snap.WriteTo(discard{}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		must(t, w.p.Save(&buf))
		must(t, w.p.Load(bytes.NewReader(saved.Bytes())))
	}
	close(stop)
	wg.Wait()
}
