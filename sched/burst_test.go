package sched

import (
	"errors"
	"sync"
	"testing"
)

// burstExec is a Burster executor: it records how deep in bursts each job
// arrived and completes jobs from a goroutine of its own.
type burstExec struct {
	mu           sync.Mutex
	depth        int
	begins, ends int
	inBurst      map[TaskID]bool
	jobs         chan Job
}

func (e *burstExec) BeginBurst() { e.mu.Lock(); e.depth++; e.begins++; e.mu.Unlock() }
func (e *burstExec) EndBurst() {
	e.mu.Lock()
	e.depth--
	e.ends++
	if e.depth < 0 {
		panic("EndBurst without BeginBurst")
	}
	e.mu.Unlock()
}
func (e *burstExec) Enqueue(j Job) {
	e.mu.Lock()
	e.inBurst[j.ID()] = e.depth > 0
	e.mu.Unlock()
	e.jobs <- j
}
func (e *burstExec) Close() error { return nil }

func newBurstExec() *burstExec {
	return &burstExec{inBurst: map[TaskID]bool{}, jobs: make(chan Job, 64)}
}

// kBurstWork is the empty kernel of burstSched's registry.
const kBurstWork KernelID = 1

// burstSched returns a scheduler with cfg and a registry of kBurstWork,
// closed when the test ends.
func burstSched(t *testing.T, cfg Config) *Scheduler {
	t.Helper()
	reg := NewRegistry()
	must(t, reg.Register(kBurstWork, Kernel{Name: "work", CPU: func(*Ctx, *TaskData) error { return nil }}))
	cfg.Kernels = reg
	s, err := New(cfg)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestBurstBracketsReleases: when a finished task releases two or more
// dependents, a Burster executor sees their Enqueues between BeginBurst and
// EndBurst, whether the release runs on a scheduler thread (a gate) or on
// the executor's own completion goroutine (a GPU task's dependents); a
// lone dependent is enqueued outside any burst; begins and ends pair up.
func TestBurstBracketsReleases(t *testing.T) {
	s := burstSched(t, Config{Workers: 2, MainThreads: 1})
	e := newBurstExec()
	must(t, s.AttachExecutor(ExecGPU, e))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the "completion goroutine"
		defer wg.Done()
		for j := range e.jobs {
			j.Done(nil)
		}
	}()
	m, err := s.RegisterThread("main")
	must(t, err)

	// A gate with 5 GPU and 3 CPU dependents; the first GPU one has 3 GPU
	// dependents of its own, released on the completion goroutine.
	gate, err := m.Create(&Task{})
	must(t, err)
	var burst, later []TaskID
	for i := range 5 {
		id, err := m.Add(&Task{Kernel: kBurstWork, Affinity: GPU, Dependency: gate})
		must(t, err)
		burst = append(burst, id)
		if i == 0 {
			for range 3 {
				id2, err := m.Add(&Task{Kernel: kBurstWork, Affinity: GPU, Dependency: id})
				must(t, err)
				later = append(later, id2)
			}
		}
	}
	var cpu []TaskID
	for range 3 {
		id, err := m.Add(&Task{Kernel: kBurstWork, Dependency: gate})
		must(t, err)
		cpu = append(cpu, id)
	}
	// A gate with one GPU dependent: no burst.
	gate1, err := m.Create(&Task{})
	must(t, err)
	lone, err := m.Add(&Task{Kernel: kBurstWork, Affinity: GPU, Dependency: gate1})
	must(t, err)

	must(t, m.Run(gate))
	for _, id := range append(append(burst, later...), cpu...) {
		must(t, m.Wait(id))
	}
	// After the others: the test's depth counter is shared by all
	// goroutines, and the completion goroutine's own burst (releasing
	// later) must not be open when lone is enqueued.
	must(t, m.Run(gate1))
	must(t, m.Wait(lone))
	close(e.jobs)
	wg.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range append(burst, later...) {
		if in, ok := e.inBurst[id]; !ok || !in {
			t.Errorf("%v: enqueued outside a burst (seen %v), want inside", id, ok)
		}
	}
	if e.inBurst[lone] {
		t.Errorf("the lone dependent %v was enqueued inside a burst", lone)
	}
	if e.begins != e.ends || e.depth != 0 || e.begins < 2 {
		t.Errorf("begins %d, ends %d, depth %d: want paired, at least 2", e.begins, e.ends, e.depth)
	}
}

// TestBurstNotForCPUFanout: a release whose dependents all run on CPU
// workers (AnyWorker, or Auto without a Placer) begins no burst, so it
// holds no executor: a GPU job another goroutine enqueues meanwhile goes
// out at once (it waited for the whole release when every release of two
// or more dependents began a burst on every executor).
func TestBurstNotForCPUFanout(t *testing.T) {
	s := burstSched(t, Config{Workers: 2, MainThreads: 1})
	e := newBurstExec()
	must(t, s.AttachExecutor(ExecGPU, e))
	m, err := s.RegisterThread("main")
	must(t, err)
	gate, err := m.Create(&Task{})
	must(t, err)
	var ids []TaskID
	for i := range 200 {
		a := AnyWorker
		if i%2 == 1 {
			a = Auto
		}
		id, err := m.Add(&Task{Kernel: kBurstWork, Affinity: a, Dependency: gate})
		must(t, err)
		ids = append(ids, id)
	}
	must(t, m.Run(gate))
	for _, id := range ids {
		must(t, m.Wait(id))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.begins != 0 {
		t.Errorf("a release of 200 CPU tasks began %d bursts on the GPU executor, want 0", e.begins)
	}
}

// TestAttachWhileCPUGraphsRun: AttachExecutor while CPU tasks with
// dependents run (its doc asks only that GPU and SPU tasks come after it)
// is no data race with their releases (go test -race).
func TestAttachWhileCPUGraphsRun(t *testing.T) {
	s := burstSched(t, Config{Workers: 2})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 300 {
			gate, err := s.Add(&Task{Kernel: kBurstWork})
			if err != nil {
				t.Error(err)
				return
			}
			a, _ := s.Add(&Task{Kernel: kBurstWork, Dependency: gate})
			b, _ := s.Add(&Task{Kernel: kBurstWork, Dependency: gate})
			if err := errors.Join(s.Wait(a), s.Wait(b)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	must(t, s.AttachExecutor(ExecGPU, newBurstExec()))
	wg.Wait()
}
