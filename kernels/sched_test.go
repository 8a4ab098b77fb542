package kernels

import (
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// rangeCounter counts kernel invocations (ranges) per kernel.
type rangeCounter struct {
	n [64]atomic.Int32
}

func (r *rangeCounter) TaskRan(ev *sched.RunEvent) {
	if int(ev.Kernel) < len(r.n) && ev.Err == nil {
		r.n[ev.Kernel].Add(1)
	}
}

func newSched(t testing.TB, workers int, obs sched.Observer) (*sched.Scheduler, *sched.Ctx) {
	t.Helper()
	reg := sched.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: workers, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.RegisterThread("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// items is the fixture size each kernel runs with in the scheduler tests.
func items(id sched.KernelID) int {
	switch id {
	case SkinLBS, SkinLBSUniform, SkinDQS, SkinDQSUniform, Saxpy:
		return 20000
	case LocalToModel, LocalToModelSkin:
		return 37
	case CRC32CBlocks:
		return 41
	}
	return 300
}

// TestKernelsThroughScheduler runs every kernel through a real scheduler,
// split into many ranges over 1, 2 and 4 workers, and compares the result
// bit for bit with one single-range call.
func TestKernelsThroughScheduler(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		var rc rangeCounter
		_, m := newSched(t, workers, &rc)
		for _, id := range IDs() {
			n := items(id)
			d := fixture(t, id, n)
			if err := runDirect(t, id, &d, 0, d.Elements); err != nil {
				t.Fatal(err)
			}
			want := outputs(&d)
			clearOutputs(&d)
			d.Grain = uint32(max(1, n/17))
			before := rc.n[id].Load()
			tid, err := m.Add(&sched.Task{Kernel: id, Data: d})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Wait(tid); err != nil {
				t.Fatal(err)
			}
			if ranges := rc.n[id].Load() - before; ranges < 2 {
				t.Fatalf("kernel %d with %d workers ran as %d range(s); want a split", id, workers, ranges)
			}
			got := outputs(&d)
			for i := range want {
				if string(got[i]) != string(want[i]) {
					t.Fatalf("kernel %d, %d workers: output %d differs from the single-range result", id, workers, i)
				}
			}
		}
	}
}

// TestKernelErrorFailsTask: a kernel's error reaches Wait as a task error.
func TestKernelErrorFailsTask(t *testing.T) {
	_, m := newSched(t, 2, nil)
	d := fixture(t, LocalToModel, 40)
	d.Params[0] = 0
	d.Grain = 4
	id, err := m.Add(&sched.Task{Kernel: LocalToModel, Data: d})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "failing kernel", m.Wait(id), "Params[0] (bones per skeleton) is 0")
}

func TestAddScan(t *testing.T) {
	_, m := newSched(t, 2, nil)
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{256, 512, 256 * 300, 256*256*2 + 256*5} {
		values := make([]uint32, n)
		for i := range values {
			values[i] = r.Uint32() >> uint(r.IntN(32)) // wraps around, with small values too
		}
		out := make([]uint32, n)
		scratch := make([]uint32, ScanScratchLen(n))
		for i := range scratch {
			scratch[i] = 0xdeadbeef // scratch need not be zeroed
		}
		id, err := AddScan(m, sched.Task{}, values, out, scratch)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Wait(id); err != nil {
			t.Fatal(err)
		}
		want := refExclusiveScan(values, 0)
		for i := range want {
			if out[i] != want[i] {
				t.Fatalf("n=%d: scan[%d] = %d, want %d", n, i, out[i], want[i])
			}
		}
	}
}

func TestAddScanRefuses(t *testing.T) {
	s, _ := newSched(t, 1, nil)
	v := make([]uint32, 512)
	for _, c := range []struct {
		values, out, scratch []uint32
		error                string
	}{
		{nil, nil, nil, "want a positive multiple of 256"},
		{v[:300], v[:300], v, "want a positive multiple of 256"},
		{v, v[:256], v, "512 values but 256 outputs"},
		{v, v, nil, "scratch holds 0 values, 512 values need 513"},
	} {
		_, err := AddScan(s, sched.Task{}, c.values, c.out, c.scratch)
		wantErr(t, "AddScan", err, c.error)
	}
	// A task the scheduler refuses (an affinity with no executor).
	scratch := make([]uint32, ScanScratchLen(512))
	_, err := AddScan(s, sched.Task{Affinity: sched.GPU}, v, make([]uint32, 512), scratch)
	wantErr(t, "AddScan on a GPU without executor", err, "no executor")
	if !strings.HasPrefix(err.Error(), "kernels: AddScan: ") {
		t.Fatalf("error %q does not name AddScan", err)
	}
}

func TestScanScratchLen(t *testing.T) {
	for _, c := range []struct{ n, want int }{{256, 1}, {512, 1 + 512}, {256 * 256, 1 + 512}, {256*256 + 256, 1 + 1024 + 512}} {
		if got := ScanScratchLen(c.n); got != c.want {
			t.Errorf("ScanScratchLen(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}
