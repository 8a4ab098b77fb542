package stress

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/affinity/placement"
	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// rig is a scheduler with every executor attached.
type rig struct {
	s      *sched.Scheduler
	main   *sched.Ctx
	render *sched.Ctx
	dev    *gpu.Device
	exec   *gpu.Executor
	spu    *spu.Executor
	placer *placement.Placer
	stop   *sched.Event
	wg     sync.WaitGroup
	// faultKernel is the kernel of the CPU tasks that fail (faultyKernel).
	faultKernel sched.KernelID
	// small is a GPU buffer too small for any task's stream: a GPU task
	// whose input names it past its end fails when the executor binds it.
	small *gpu.Buffer
}

func openDevice(t *testing.T) *gpu.Device {
	t.Helper()
	dev, _ := gputest.Open(t, gpu.Options{})
	return dev
}

func newRig(t *testing.T, dev *gpu.Device, workers int) *rig {
	t.Helper()
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		t.Fatal(err)
	}
	r := &rig{dev: dev}
	var err error
	if r.faultKernel, err = registerFaultKernel(reg); err != nil {
		t.Fatal(err)
	}
	if r.small, err = dev.NewBuffer(16); err != nil {
		t.Fatal(err)
	}
	r.placer = placement.New(placement.Options{SharedCores: dev.Selection().Chosen.Type == gpu.TypeCPU})
	r.s, err = sched.New(sched.Config{Kernels: reg, Workers: workers, MainThreads: 2, Placer: r.placer, Observer: r.placer})
	if err != nil {
		t.Fatal(err)
	}
	if r.exec, err = gpu.NewExecutor(dev, gpu.ExecutorOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.spu, err = spu.New(spu.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := r.s.AttachExecutor(sched.ExecGPU, r.exec); err != nil {
		t.Fatal(err)
	}
	if err := r.s.AttachExecutor(sched.ExecSPU, r.spu); err != nil {
		t.Fatal(err)
	}
	r.placer.Attach(r.s)
	r.main, _ = r.s.RegisterThread("main")
	r.render, _ = r.s.RegisterThread("render")
	r.stop = r.s.NewEvent()
	r.wg.Go(func() { r.render.WaitEvent(r.stop) }) // the render thread serves its pinned tasks
	return r
}

func (r *rig) close(t *testing.T) {
	r.stop.Signal()
	r.wg.Wait()
	if err := r.s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := r.small.Close(); err != nil {
		t.Errorf("closing the small buffer: %v", err)
	}
}

var affinities = []sched.Affinity{sched.AnyWorker, sched.OnThread(0), sched.OnThread(1), sched.GPU, sched.SPU, sched.Auto}

// fault is a failure injected into one task, the ways users' kernels fail.
type fault uint32

const (
	noFault        fault = iota
	faultError           // the CPU kernel returns an error
	faultPanic           // the CPU kernel panics
	faultGoexit          // the CPU kernel calls runtime.Goexit (testing's FailNow in a kernel)
	faultBadStream       // a GPU task's input lies outside its buffer: the executor refuses it
	nFaults
)

func (f fault) String() string {
	return [...]string{"none", "error", "panic", "Goexit", "bad stream"}[f]
}

// faultFor picks the fault of a failing task of affinity a. GPU tasks get a
// bad stream (their kernel runs in a shader, which cannot fail on its own);
// CPU kernels return an error, panic or call runtime.Goexit, except on a
// registered thread, whose goroutine Goexit would end (see faultyKernel).
func faultFor(a sched.Affinity, pick int) fault {
	if a == sched.GPU {
		return faultBadStream
	}
	if _, pinned := a.Thread(); pinned {
		return []fault{faultError, faultPanic}[pick%2]
	}
	return []fault{faultError, faultPanic, faultGoexit}[pick%3]
}

// faultKernelName is the name of the kernel that fails (faultyKernel).
const faultKernelName = "stress.fault"

// errInjected is wrapped by the errors faultyKernel returns.
var errInjected = errors.New("injected kernel error")

// goexitOnThread begins the panic of a Goexit fault that ran on a
// registered thread.
const goexitOnThread = "Goexit fault on a registered thread, panicking instead"

// Params of faultyKernel: Params[0] is saxpy's a, unused.
const (
	paramFault = 1 // the fault
	paramTag   = 2 // chain<<8 | step, named in the failure
)

func tagOf(chain, step int) uint32 { return uint32(chain)<<8 | uint32(step) }

func tagText(tag uint32) string { return fmt.Sprintf("chain %d step %d", tag>>8, tag&0xff) }

// registerFaultKernel registers faultyKernel with saxpy's streams, so a
// failing step takes a saxpy step's place in a chain. It has no GPU
// binding: Auto places it on a CPU worker or the SPU executor.
func registerFaultKernel(reg *sched.Registry) (sched.KernelID, error) {
	k, err := kernels.Definition(kernels.Saxpy)
	if err != nil {
		return 0, err
	}
	k.Name, k.CPU, k.GPU, k.SPU = faultKernelName, faultyKernel, nil, nil
	return reg.RegisterNext(k)
}

// faultyKernel fails as Params[paramFault] says, in every range it is
// called with. A runtime.Goexit is made only on a goroutine the scheduler
// or the SPU executor owns (a worker's; an SPU unit's, which passes no
// Ctx): on a registered thread, whose helping wait may run any task, it
// would end the test's own goroutine or the render thread, so the kernel
// panics there instead.
func faultyKernel(c *sched.Ctx, t *sched.TaskData) error {
	tag := tagText(t.Params[paramTag])
	switch fault(t.Params[paramFault]) {
	case faultError:
		return fmt.Errorf("%w (%s)", errInjected, tag)
	case faultPanic:
		panic("injected panic (" + tag + ")")
	case faultGoexit:
		if c != nil && c.Index() >= c.Scheduler().Workers() {
			panic(goexitOnThread + " (" + tag + ")")
		}
		runtime.Goexit()
	}
	return fmt.Errorf("%s called with fault %d (%s), which is no CPU fault", faultKernelName, t.Params[paramFault], tag)
}

// badStream returns a stream of n float32 that names r.small from an
// aligned offset past its end: valid for the scheduler (which knows no
// buffers), refused by the GPU executor when it binds the task.
func (r *rig) badStream(n int) sched.Stream {
	align, _ := r.dev.BindingAlignment()
	align = max(align, 1)
	off := (r.small.Size() + align) / align * align
	return r.small.Stream(4, uint32(n), off)
}

// makeFaulty turns tk (a saxpy step of affinity tk.Affinity) into one that
// fails with f; tag names it in the failure.
func (r *rig) makeFaulty(tk *sched.Task, f fault, tag uint32) {
	if f == faultBadStream {
		tk.Data.In[1] = r.badStream(int(tk.Data.Elements))
		return
	}
	tk.Kernel = r.faultKernel
	tk.Data.Params[paramFault] = uint32(f)
	tk.Data.Params[paramTag] = tag
}

// taskErrors lists the *sched.TaskErrors in err's tree, outermost first: a
// dependent's error names the dependent, then its dependency, and so on down
// to the task that failed of its own cause; a parent's, the parent, then
// the child that failed.
func taskErrors(err error) []*sched.TaskError {
	var out []*sched.TaskError
	var walk func(error)
	walk = func(e error) {
		if te, ok := e.(*sched.TaskError); ok {
			out = append(out, te)
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// checkOwnErr checks the error of task id, which failed with fault f (tag
// names it): a *sched.TaskError for id that names the kernel and wraps
// the cause, and no other task. It returns what is wrong ("" if nothing)
// and, for a Goexit fault, whether the kernel really exited its goroutine.
func (r *rig) checkOwnErr(err error, id sched.TaskID, f fault, tag uint32) (problem string, exited bool) {
	tes := taskErrors(err)
	if len(tes) != 1 || tes[0].Task != id {
		return fmt.Sprintf("want one *sched.TaskError for %v, got %d in %v", id, len(tes), err), false
	}
	kernel, name := r.faultKernel, faultKernelName
	if f == faultBadStream {
		kernel, name = kernels.Saxpy, "saxpy"
	}
	if tes[0].Kernel != kernel || tes[0].Name != name || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
		return fmt.Sprintf("error does not name kernel %d %q: %v", kernel, name, err), false
	}
	text, want := err.Error(), tagText(tag)
	ok := false
	switch f {
	case faultError:
		ok = errors.Is(err, errInjected) && strings.Contains(text, want)
	case faultPanic:
		ok = errors.Is(err, sched.ErrKernelPanic) && strings.Contains(text, "injected panic ("+want+")")
	case faultGoexit:
		exited = strings.Contains(text, "runtime.Goexit")
		ok = errors.Is(err, sched.ErrKernelPanic) && (exited || strings.Contains(text, goexitOnThread+" ("+want+")"))
	case faultBadStream:
		ok = errors.Is(err, gpu.ErrBadStream) && strings.Contains(text, "outside buffer")
	}
	if !ok {
		return fmt.Sprintf("error does not give the cause (%v fault): %v", f, err), false
	}
	return "", exited
}

// checkDepErr checks the error of a task that failed because its
// dependency did: ids are the task, its dependency, that one's, and so on
// down to the task that failed of its own cause, each named in turn.
func checkDepErr(err error, ids []sched.TaskID) string {
	tes := taskErrors(err)
	if !errors.Is(err, sched.ErrDepFailed) || len(tes) != len(ids) {
		return fmt.Sprintf("want ErrDepFailed naming %v, got %v", ids, err)
	}
	for i, te := range tes {
		if te.Task != ids[i] {
			return fmt.Sprintf("error names %v where the dependency chain has %v (want %v): %v", te.Task, ids[i], ids, err)
		}
	}
	return ""
}

// chain is a sequence of saxpy steps, each on its own output buffer and
// each reading the previous step's output: out[k] = a[k]*x + out[k-1]. Each
// step depends on the previous one, so a wrong order gives a wrong result.
// At most one step (faultStep, -1 if none) fails with fault; the steps
// after it fail with it, unrun.
type chain struct {
	x         []float32
	outs      [][]float32
	a         []float32
	ids       []sched.TaskID
	aff       []sched.Affinity
	faultStep int
	fault     fault
}

// expect returns what each out[k] holds once step k ran, up to step last.
func (c *chain) expect(last int) [][]float32 {
	y := make([]float32, len(c.x))
	for i := range y {
		y[i] = float32(i % 7)
	}
	want := make([][]float32, last+1)
	for k := range want {
		want[k] = make([]float32, len(y))
		for i := range y {
			y[i] = float32(c.a[k]*c.x[i]) + y[i]
		}
		copy(want[k], y)
	}
	return want
}

// watchdog panics with every goroutine's stack unless the returned stop is
// called within d: a hang fails the run at once, showing where it hangs,
// instead of at go test's time-out.
func watchdog(what string, d time.Duration) (stop func()) {
	tm := time.AfterFunc(d, func() {
		buf := make([]byte, 1<<20)
		panic(fmt.Sprintf("%s still running after %v: a hang\n%s", what, d, buf[:runtime.Stack(buf, true)]))
	})
	return func() { tm.Stop() }
}

// hangAfter bounds a round, or a Close test, even on a loaded machine with
// the race detector (they take about a second).
const hangAfter = 2 * time.Minute

// faultTally counts the faults injected, and the Goexit faults that really
// exited their goroutine.
type faultTally struct {
	injected [nFaults]int
	exited   int
}

// TestRandomGraphsEveryAffinity builds random graphs of saxpy chains with
// random affinities, sizes, priorities and join parents, where a third of
// the chains have one step that fails (a CPU kernel that returns an error,
// panics or calls runtime.Goexit; a GPU task with an input outside its
// buffer), runs them and checks what the scheduler promises: every step
// before a failure, and every chain without one, finished without error
// with the right result (which proves each step ran, in order, on whatever
// device); the failed step's error names it, its kernel and the cause; each
// later step failed unrun, its error naming its dependency down to the
// failed step; the join parent failed naming a failed chain; nothing is
// left pending; each round, Close included, ends within hangAfter; no
// goroutine is left. Rounds: VKJOBS_SOAK (a duration) for a long run.
func TestRandomGraphsEveryAffinity(t *testing.T) {
	dev := openDevice(t)
	defer dev.Close()
	before := runtime.NumGoroutine()
	soak, _ := time.ParseDuration(os.Getenv("VKJOBS_SOAK"))
	began := time.Now()
	tasks := 0
	var tally faultTally
	for round := 0; ; round++ {
		if soak == 0 && round >= 6 || soak > 0 && time.Since(began) > soak {
			break
		}
		func() {
			defer watchdog(fmt.Sprintf("round %d", round), hangAfter)()
			r := newRig(t, dev, 1+round%2)
			tasks += runRound(t, r, uint64(round), &tally)
			r.close(t)
		}()
		if t.Failed() {
			return
		}
	}
	for f := faultError; f < nFaults; f++ {
		if tally.injected[f] == 0 {
			t.Errorf("no %v fault injected: the rounds test fewer failures than they claim", f)
		}
	}
	if err := dev.ValidationErr(); err != nil {
		t.Fatalf("validation layer: %v", err)
	}
	waitGoroutines(t, before)
	t.Logf("%d tasks over every affinity in %v; faults injected %v (none, error, panic, Goexit, bad stream), %d Goexit faults exited their goroutine",
		tasks, time.Since(began).Round(time.Millisecond), tally.injected, tally.exited)
}

func runRound(t *testing.T, r *rig, seed uint64, tally *faultTally) int {
	rng := rand.New(rand.NewPCG(seed, 7))
	const chains = 24
	var cs []*chain
	tasks := 0
	join, err := r.main.Create(&sched.Task{})
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < chains; c++ {
		n := []int{1, 7, 300, 4096, 70000}[rng.IntN(5)]
		ch := &chain{x: make([]float32, n), faultStep: -1}
		y0 := make([]float32, n)
		for i := range ch.x {
			ch.x[i] = float32(i%13) * 0.25
			y0[i] = float32(i % 7)
		}
		prevOut, prev := y0, sched.NoTask
		steps := 1 + rng.IntN(5)
		if rng.IntN(3) == 0 {
			ch.faultStep = rng.IntN(steps)
		}
		for k := 0; k < steps; k++ {
			out := make([]float32, n)
			a := float32(rng.IntN(8)) * 0.5
			var tk sched.Task
			tk.Kernel = kernels.Saxpy
			tk.Priority = sched.Priority(rng.IntN(3) - 1) // low, normal or high
			tk.Affinity = affinities[rng.IntN(len(affinities))]
			tk.Dependency = prev
			if k == steps-1 {
				tk.Parent = join
			}
			tk.Data.Params[0] = math.Float32bits(a)
			tk.Data.Elements = uint32(n)
			tk.Data.In[0], tk.Data.In[1] = sched.StreamOf(ch.x), sched.StreamOf(prevOut)
			tk.Data.Out[0] = sched.StreamOf(out)
			if k == ch.faultStep {
				ch.fault = faultFor(tk.Affinity, rng.IntN(6))
				r.makeFaulty(&tk, ch.fault, tagOf(c, k))
				tally.injected[ch.fault]++
			}
			id, err := r.main.Add(&tk)
			if err != nil {
				t.Fatalf("chain %d step %d (%v): %v", c, k, tk.Affinity, err)
			}
			ch.outs, ch.a, ch.ids, ch.aff = append(ch.outs, out), append(ch.a, a), append(ch.ids, id), append(ch.aff, tk.Affinity)
			prevOut, prev = out, id
			tasks++
		}
		cs = append(cs, ch)
	}
	if err := r.main.Run(join); err != nil {
		t.Fatal(err)
	}
	joinErr := r.main.Wait(join)
	for c, ch := range cs {
		ran := len(ch.ids) - 1 // the last step that ran without error
		if ch.faultStep >= 0 {
			ran = ch.faultStep - 1
		}
		want := ch.expect(ran)
		for k, id := range ch.ids {
			if !r.s.IsFinished(id) {
				t.Fatalf("round %d chain %d step %d (%v): not finished after the join", seed, c, k, id)
			}
			err := r.s.Err(id)
			switch {
			case ch.faultStep < 0 || k < ch.faultStep:
				if err != nil {
					t.Fatalf("round %d chain %d step %d (%v, %v): %v", seed, c, k, id, ch.aff[k], err)
				}
				want, got := want[k], ch.outs[k]
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*math.Max(1, math.Abs(float64(want[i]))) {
						t.Fatalf("round %d chain %d step %d (affinities %v): out[%d] = %v, want %v", seed, c, k, ch.aff, i, got[i], want[i])
					}
				}
			case k == ch.faultStep:
				p, exited := r.checkOwnErr(err, id, ch.fault, tagOf(c, k))
				if p != "" {
					t.Fatalf("round %d chain %d step %d (%v, %v fault): %s", seed, c, k, ch.aff[k], ch.fault, p)
				}
				if exited {
					tally.exited++
				}
			default:
				if p := checkDepErr(err, ch.dependencyChain(k)); p != "" {
					t.Fatalf("round %d chain %d step %d after the failed step %d: %s", seed, c, k, ch.faultStep, p)
				}
			}
		}
	}
	checkJoinErr(t, joinErr, join, cs)
	if p := r.s.Pending(); p != 0 {
		t.Fatalf("%d tasks pending after the join", p)
	}
	return tasks
}

// dependencyChain returns step k's ID and its dependencies' down to the
// failed step.
func (c *chain) dependencyChain(k int) []sched.TaskID {
	var ids []sched.TaskID
	for j := k; j >= c.faultStep; j-- {
		ids = append(ids, c.ids[j])
	}
	return ids
}

// checkJoinErr checks the join parent's error: nil if no chain failed, else
// ErrChildFailed naming the join, then the last step of a failed chain and
// its dependencies down to that chain's failed step.
func checkJoinErr(t *testing.T, err error, join sched.TaskID, cs []*chain) {
	t.Helper()
	failed := false
	for _, ch := range cs {
		failed = failed || ch.faultStep >= 0
	}
	if !failed {
		if err != nil {
			t.Fatalf("join of chains that all succeeded: %v", err)
		}
		return
	}
	tes := taskErrors(err)
	if !errors.Is(err, sched.ErrChildFailed) || len(tes) < 2 || tes[0].Task != join {
		t.Fatalf("join %v with failed children: want ErrChildFailed naming the join, got %v", join, err)
	}
	for _, ch := range cs {
		if ch.faultStep < 0 || ch.ids[len(ch.ids)-1] != tes[1].Task {
			continue
		}
		want := append([]sched.TaskID{join}, ch.dependencyChain(len(ch.ids)-1)...)
		if len(tes) != len(want) {
			t.Fatalf("join's error names %d tasks, want %v: %v", len(tes), want, err)
		}
		for i := range want {
			if tes[i].Task != want[i] {
				t.Fatalf("join's error names %v where %v belongs (want %v): %v", tes[i].Task, want[i], want, err)
			}
		}
		return
	}
	t.Fatalf("join's error names %v, which is no failed chain's last step: %v", tes[1].Task, err)
}

// TestCloseWithWorkQueuedEverywhere queues chains on every affinity, a
// fifth of the tasks failing of their own (a CPU kernel's error, panic or
// runtime.Goexit; a GPU task's input outside its buffer), and closes the
// scheduler at once: Close must return, within hangAfter; every task must
// end finished, none twice: run, failed of its own cause (its error naming
// its kernel and the cause), failed with ErrClosed, or, exactly when its
// dependency failed, failed unrun with ErrDepFailed naming the dependency;
// no goroutine may be left.
func TestCloseWithWorkQueuedEverywhere(t *testing.T) {
	dev := openDevice(t)
	defer dev.Close()
	before := runtime.NumGoroutine()
	defer watchdog("Close with work queued everywhere", hangAfter)()
	r := newRig(t, dev, 1)
	type queued struct {
		id, dep sched.TaskID
		fault   fault
		tag     uint32
	}
	var tasks []queued
	x := make([]float32, 50000)
	for c := 0; c < 60; c++ {
		prev := sched.NoTask
		for k := 0; k < 3; k++ {
			var tk sched.Task
			tk.Kernel = kernels.Saxpy
			tk.Affinity = affinities[(c+k)%len(affinities)]
			tk.Dependency = prev
			tk.Data.Elements = uint32(len(x))
			tk.Data.In[0], tk.Data.In[1] = sched.StreamOf(x), sched.StreamOf(x)
			tk.Data.Out[0] = sched.StreamOf(make([]float32, len(x)))
			q := queued{dep: prev, tag: tagOf(c, k)}
			if (3*c+k)%5 == 2 {
				q.fault = faultFor(tk.Affinity, c)
				r.makeFaulty(&tk, q.fault, q.tag)
			}
			id, err := r.main.Add(&tk)
			if err != nil {
				t.Fatal(err)
			}
			q.id = id
			tasks = append(tasks, q)
			prev = id
		}
	}
	r.stop.Signal() // the render thread stops serving: its queued tasks must fail, not hang
	r.wg.Wait()
	if err := r.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.small.Close(); err != nil {
		t.Fatalf("closing the small buffer: %v", err)
	}
	var ran, own, closed, dep int
	for _, q := range tasks {
		if !r.s.IsFinished(q.id) {
			t.Fatalf("task %v not finished after Close", q.id)
		}
		err := r.s.Err(q.id)
		depFailed := q.dep != sched.NoTask && r.s.Err(q.dep) != nil
		switch {
		case depFailed:
			if tes := taskErrors(err); !errors.Is(err, sched.ErrDepFailed) || len(tes) < 2 || tes[0].Task != q.id || tes[1].Task != q.dep {
				t.Fatalf("task %v (%s): want ErrDepFailed naming it, then its dependency %v: %v", q.id, tagText(q.tag), q.dep, err)
			}
			dep++
		case err == nil:
			if q.fault != noFault {
				t.Fatalf("task %v (%s, %v fault) ran without error", q.id, tagText(q.tag), q.fault)
			}
			ran++
		case errors.Is(err, sched.ErrClosed):
			if tes := taskErrors(err); len(tes) != 1 || tes[0].Task != q.id {
				t.Fatalf("task %v (%s) closed: the error does not name it alone: %v", q.id, tagText(q.tag), err)
			}
			closed++
		case q.fault != noFault:
			if p, _ := r.checkOwnErr(err, q.id, q.fault, q.tag); p != "" {
				t.Fatalf("task %v (%s, %v fault): %s", q.id, tagText(q.tag), q.fault, p)
			}
			own++
		default:
			t.Fatalf("task %v (%s) failed with %v, want ErrClosed or a failed dependency", q.id, tagText(q.tag), err)
		}
	}
	if _, err := r.main.Add(&sched.Task{}); !errors.Is(err, sched.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := dev.ValidationErr(); err != nil {
		t.Fatalf("validation layer: %v", err)
	}
	waitGoroutines(t, before)
	t.Logf("Close with %d tasks queued on every affinity: %d ran, %d failed of their own fault, %d with ErrClosed, %d with their dependency",
		len(tasks), ran, own, closed, dep)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, want %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
