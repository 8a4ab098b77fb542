package sched

// Benchmarks that put the scheduler beside its peers in one process, so
// their ratios can be read from one `go test -bench` run:
//
//	go test -run '^$' -bench 'Peers' -count 10 ./sched/
//
// (BENCHMARKS.md, section sched-peers, has the medians and ratios). The
// -count repeats of one row run back to back, so load that drifts over
// seconds can favour one row over another; BenchmarkPeersEmptyMix
// interleaves its three rows inside every op for that reason. The peers are
// pinned in go.mod: github.com/alitto/pond/v2, github.com/panjf2000/ants/v2,
// github.com/noneback/go-taskflow and golang.org/x/sync/errgroup, beside a
// bare channel pool, sync.WaitGroup.Go and hand-split goroutines.
//
// Every benchmark reports ns/task (or ns/node, ns/elem) with
// b.ReportMetric and allocs/task from the runtime's malloc count over the
// whole timed loop, so rows with different task counts per op compare
// directly. Peers that cannot run a shape (a fixed pool whose tasks wait for
// subtasks deadlocks) keep their row and skip it with the reason.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alitto/pond/v2"
	gotaskflow "github.com/noneback/go-taskflow"
	"github.com/panjf2000/ants/v2"
	"golang.org/x/sync/errgroup"
)

const (
	pkEmpty   KernelID = 40
	pkFib     KernelID = 41
	pkCompute KernelID = 42
)

// peerTasks is how many empty tasks one op of BenchmarkPeersEmpty adds.
const peerTasks = 10000

// perTask measures the timed loop's allocations and reports them, and the
// time, per unit (task, node, element): n units per op.
type perTask struct {
	b       *testing.B
	n       int
	mallocs uint64
	unit    string
}

func startPerTask(b *testing.B, n int, unit string) *perTask {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ResetTimer()
	return &perTask{b: b, n: n, mallocs: ms.Mallocs, unit: unit}
}

func (p *perTask) stop() {
	b := p.b
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	units := float64(b.N) * float64(p.n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/units, "ns/"+p.unit)
	b.ReportMetric(float64(ms.Mallocs-p.mallocs)/units, "allocs/"+p.unit)
}

// peerSched makes a scheduler with the default thread count (GOMAXPROCS:
// one worker per P but one, plus the registered main thread).
func peerSched(b *testing.B) (*Scheduler, *Ctx) {
	return newBenchSched(b, pkEmpty, pkFib, pkCompute, fibEveryKernel)
}

// chanPool is the simplest pool: GOMAXPROCS goroutines reading funcs from
// one buffered channel. It has no priorities, affinity, dependencies or
// waiting inside a task.
type chanPool struct {
	ch   chan func()
	done sync.WaitGroup
}

func newChanPool(workers, depth int) *chanPool {
	p := &chanPool{ch: make(chan func(), depth)}
	for range workers {
		p.done.Go(func() {
			for f := range p.ch {
				f()
			}
		})
	}
	return p
}

func (p *chanPool) Go(f func()) { p.ch <- f }
func (p *chanPool) close()      { close(p.ch); p.done.Wait() }

func newPond(b *testing.B) pond.Pool {
	p := pond.NewPool(runtime.GOMAXPROCS(0))
	b.Cleanup(p.StopAndWait)
	return p
}

func newAnts(b *testing.B, size int) *ants.Pool {
	p, err := ants.NewPool(size)
	must(b, err)
	b.Cleanup(p.Release)
	return p
}

// BenchmarkPeersEmpty: 10,000 empty tasks added one by one, then waited
// for as a whole; ns/task and allocs/task.
func BenchmarkPeersEmpty(b *testing.B) {
	b.Run("sched", func(b *testing.B) {
		_, m := peerSched(b)
		task := Task{Kernel: pkEmpty}
		pt := startPerTask(b, peerTasks, "task")
		for range b.N {
			root, err := m.Create(&Task{})
			if err != nil {
				b.Fatal(err)
			}
			task.Parent = root
			for range peerTasks {
				if _, err := m.Add(&task); err != nil {
					b.Fatal(err)
				}
			}
			must(b, m.Run(root))
			must(b, m.Wait(root))
		}
		pt.stop()
	})
	b.Run("chanpool", func(b *testing.B) {
		p := newChanPool(runtime.GOMAXPROCS(0), 1024)
		defer p.close()
		var wg sync.WaitGroup
		f := func() { wg.Done() }
		pt := startPerTask(b, peerTasks, "task")
		for range b.N {
			for range peerTasks {
				wg.Add(1)
				p.Go(f)
			}
			wg.Wait()
		}
		pt.stop()
	})
	b.Run("pond", func(b *testing.B) {
		p := newPond(b)
		var wg sync.WaitGroup
		f := func() { wg.Done() }
		pt := startPerTask(b, peerTasks, "task")
		for range b.N {
			for range peerTasks {
				wg.Add(1)
				if err := p.Go(f); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
		}
		pt.stop()
	})
	b.Run("ants", func(b *testing.B) {
		p := newAnts(b, runtime.GOMAXPROCS(0))
		var wg sync.WaitGroup
		f := func() { wg.Done() }
		pt := startPerTask(b, peerTasks, "task")
		for range b.N {
			for range peerTasks {
				wg.Add(1)
				if err := p.Submit(f); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
		}
		pt.stop()
	})
	b.Run("waitgroup", func(b *testing.B) {
		pt := startPerTask(b, peerTasks, "task")
		for range b.N {
			var wg sync.WaitGroup
			for range peerTasks {
				wg.Go(func() {})
			}
			wg.Wait()
		}
		pt.stop()
	})
	b.Run("errgroup", func(b *testing.B) {
		pt := startPerTask(b, peerTasks, "task")
		for range b.N {
			var g errgroup.Group
			for range peerTasks {
				g.Go(func() error { return nil })
			}
			must(b, g.Wait())
		}
		pt.stop()
	})
	// go-taskflow runs static graphs: the 10,000 tasks are built once and
	// the graph is run per op (as the C++ Taskflow anchor in BENCHMARKS.md).
	b.Run("taskflow", func(b *testing.B) {
		runTaskflow(b, "empty", peerTasks, "task", func(tf *gotaskflow.TaskFlow) {
			for range peerTasks {
				tf.NewTask("t", func() {})
			}
		})
	})
}

// BenchmarkPeersEmptyMix: the scheduler, the channel pool and pond side
// by side in one op (one round of 10,000 empty tasks each, in turn), so
// that load from other programs, which drifts over seconds, falls on all
// three alike. It reports each one's ns/task over the whole run and the
// ratios sched/chanpool and sched/pond; with -count 10 the ratios of the
// ten runs are the figures BENCHMARKS.md quotes.
func BenchmarkPeersEmptyMix(b *testing.B) {
	_, m := peerSched(b)
	cp := newChanPool(runtime.GOMAXPROCS(0), 1024)
	defer cp.close()
	pp := newPond(b)
	var wg sync.WaitGroup
	f := func() { wg.Done() }
	task := Task{Kernel: pkEmpty}
	rows := [3]func(){
		func() {
			root, err := m.Create(&Task{})
			if err != nil {
				b.Fatal(err)
			}
			task.Parent = root
			for range peerTasks {
				if _, err := m.Add(&task); err != nil {
					b.Fatal(err)
				}
			}
			must(b, m.Run(root))
			must(b, m.Wait(root))
		},
		func() {
			for range peerTasks {
				wg.Add(1)
				cp.Go(f)
			}
			wg.Wait()
		},
		func() {
			for range peerTasks {
				wg.Add(1)
				if err := pp.Go(f); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
		},
	}
	var t [3]time.Duration
	b.ResetTimer()
	for i := range b.N {
		// The rows take turns going first: a row pays for what the row
		// before it left behind (pond's garbage is collected during the
		// next row, and that row was always sched's when the order was
		// fixed).
		for j := range rows {
			k := (i + j) % len(rows)
			t0 := time.Now()
			rows[k]()
			t[k] += time.Since(t0)
		}
	}
	b.StopTimer()
	n := float64(b.N) * peerTasks
	b.ReportMetric(float64(t[0].Nanoseconds())/n, "sched-ns/task")
	b.ReportMetric(float64(t[1].Nanoseconds())/n, "chanpool-ns/task")
	b.ReportMetric(float64(t[2].Nanoseconds())/n, "pond-ns/task")
	b.ReportMetric(float64(t[0])/float64(t[1]), "sched/chanpool")
	b.ReportMetric(float64(t[0])/float64(t[2]), "sched/pond")
}

// Fib: fib(25) with a task per call, each call n >= 2 spawning both
// fib(n-1) and fib(n-2) as tasks and waiting for them: 242,785 tasks
// (2*fib(26)-1) per op, the count the C++ anchors used.
const (
	fibN     = 25
	fibWant  = 75025
	fibTasks = 242785
)

// fibCells gives each running fib kernel two result cells, found by the
// slot of its task (unique while the task lives) and n (unique among the
// calls RunInPlace nests inside one task); the last row serves the calls
// made in place by a thread that runs no task (Current is NoTask). A
// kernel hands its cells to its children and reads them after waiting
// for both: no atomics, no allocation, and nothing shared with a kernel
// that runs on the same thread while this one waits (a wait may hand the
// thread to another goroutine, and its kernels may still be suspended when
// this one resumes, so a stack of cells per thread would not do).
var fibCellRows [1<<14 + 1][32][2]uint32

func fibCells(c *Ctx, n uint32) *[2]uint32 {
	row := len(fibCellRows) - 1
	if id := c.Current(); id != NoTask {
		row = int(id.index())
	}
	return &fibCellRows[row][n]
}

func fibEveryKernel(c *Ctx, d *TaskData) error {
	n := d.Params[0]
	out := d.Data.(*uint32)
	if n < 2 {
		*out = n
		return nil
	}
	cells := fibCells(c, n)
	var t Task // Add copies it: one Task serves both children
	t.Kernel = pkFib
	t.Data.Params[0], t.Data.Data = n-1, &cells[0]
	ia, err := c.Add(&t)
	if err != nil {
		return err
	}
	t.Data.Params[0], t.Data.Data = n-2, &cells[1]
	ib, err := c.Add(&t)
	if err != nil {
		return err
	}
	if err := c.Wait(ib); err != nil {
		return err
	}
	if err := c.Wait(ia); err != nil {
		return err
	}
	*out = cells[0] + cells[1]
	return nil
}

func fibWG(n uint32) uint32 {
	if n < 2 {
		return n
	}
	var x, y uint32
	var wg sync.WaitGroup
	wg.Go(func() { x = fibWG(n - 1) })
	wg.Go(func() { y = fibWG(n - 2) })
	wg.Wait()
	return x + y
}

func fibErrgroup(n uint32) uint32 {
	if n < 2 {
		return n
	}
	var x, y uint32
	var g errgroup.Group
	g.Go(func() error { x = fibErrgroup(n - 1); return nil })
	g.Go(func() error { y = fibErrgroup(n - 2); return nil })
	g.Wait()
	return x + y
}

func fibPond(p pond.Pool, n uint32) uint32 {
	if n < 2 {
		return n
	}
	var x, y uint32
	ta := p.Submit(func() { x = fibPond(p, n-1) })
	tb := p.Submit(func() { y = fibPond(p, n-2) })
	ta.Wait()
	tb.Wait()
	return x + y
}

func fibAnts(p *ants.Pool, n uint32) uint32 {
	if n < 2 {
		return n
	}
	var x, y uint32
	var wg sync.WaitGroup
	wg.Add(2)
	p.Submit(func() { x = fibAnts(p, n-1); wg.Done() })
	p.Submit(func() { y = fibAnts(p, n-2); wg.Done() })
	wg.Wait()
	return x + y
}

func fibTaskflow(sf *gotaskflow.Subflow, n uint32, out *uint32) {
	if n < 2 {
		*out = n
		return
	}
	var x, y uint32
	a := sf.NewSubflow("f", func(sf *gotaskflow.Subflow) { fibTaskflow(sf, n-1, &x) })
	c := sf.NewSubflow("f", func(sf *gotaskflow.Subflow) { fibTaskflow(sf, n-2, &y) })
	sum := sf.NewTask("s", func() { *out = x + y })
	sum.Succeed(a, c)
}

// BenchmarkPeersFib: fib(25) spawning at every level, on 1 and 2 Ps
// (GOMAXPROCS; the scheduler gets one worker per P but one plus the main
// thread, at least one worker).
func BenchmarkPeersFib(b *testing.B) {
	check := func(b *testing.B, r uint32) {
		if r != fibWant {
			b.Fatalf("fib(%d) = %d, want %d", fibN, r, fibWant)
		}
	}
	for _, procs := range []int{1, 2} {
		withProcs := func(f func(b *testing.B)) func(b *testing.B) {
			return func(b *testing.B) {
				old := runtime.GOMAXPROCS(procs)
				defer runtime.GOMAXPROCS(old)
				f(b)
			}
		}
		suffix := "/p1"
		if procs == 2 {
			suffix = "/p2"
		}
		b.Run("sched"+suffix, withProcs(func(b *testing.B) {
			_, m := peerSched(b)
			var res uint32
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				t := Task{Kernel: pkFib}
				t.Data.Params[0] = fibN
				t.Data.Data = &res
				id, err := m.Add(&t)
				if err != nil {
					b.Fatal(err)
				}
				must(b, m.Wait(id))
				check(b, res)
			}
			pt.stop()
		}))
		b.Run("sched-inplace"+suffix, withProcs(func(b *testing.B) {
			// One child through Add, the other run in place (Rayon's join).
			s, m := peerSched(b)
			registerFibInPlace(b, s)
			var res uint32
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				t := Task{Kernel: fibInPlaceID}
				t.Data.Params[0], t.Data.Data = fibN, &res
				must(b, m.RunInPlace(&t))
				check(b, res)
			}
			pt.stop()
		}))
		b.Run("sched-join"+suffix, withProcs(func(b *testing.B) {
			// Both children through Join: one shared, run here if
			// nobody took it, the other run in place.
			s, m := peerSched(b)
			registerFibJoin(b, s)
			cells := make([]uint32, fibTasks)
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				check(b, runFibJoin(b, m, fibN, &cells))
			}
			pt.stop()
		}))
		b.Run("waitgroup"+suffix, withProcs(func(b *testing.B) {
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				check(b, fibWG(fibN))
			}
			pt.stop()
		}))
		b.Run("errgroup"+suffix, withProcs(func(b *testing.B) {
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				check(b, fibErrgroup(fibN))
			}
			pt.stop()
		}))
		b.Run("chanpool"+suffix, func(b *testing.B) {
			b.Skip("a fixed pool of GOMAXPROCS goroutines: a task that waits for its subtasks holds its worker, and with fib's nesting every worker waits and nothing runs (deadlock)")
		})
		b.Run("pond"+suffix, func(b *testing.B) {
			b.Skip("pond.NewPool(GOMAXPROCS): a task that waits for its subtasks holds a worker; with fib's nesting every worker waits (deadlock). pond-unbounded runs it")
		})
		b.Run("pond-unbounded"+suffix, withProcs(func(b *testing.B) {
			p := pond.NewPool(0) // no limit: a new goroutine whenever all wait
			defer p.StopAndWait()
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				check(b, fibPond(p, fibN))
			}
			pt.stop()
		}))
		b.Run("ants"+suffix, func(b *testing.B) {
			b.Skip("ants.NewPool(GOMAXPROCS): a task that waits for its subtasks holds a worker; with fib's nesting every worker waits (deadlock). ants-unbounded runs it")
		})
		b.Run("ants-unbounded"+suffix, withProcs(func(b *testing.B) {
			p := newAnts(b, -1)
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				check(b, fibAnts(p, fibN))
			}
			pt.stop()
		}))
		b.Run("taskflow"+suffix, withProcs(func(b *testing.B) {
			// Subflows block their goroutine until their graph is done,
			// so the executor needs more goroutines than subflows in
			// flight (go-taskflow's NewExecutor documentation).
			e := gotaskflow.NewExecutor(1 << 20)
			pt := startPerTask(b, fibTasks, "task")
			for range b.N {
				var res uint32
				tf := gotaskflow.NewTaskFlow("fib")
				tf.NewSubflow("f", func(sf *gotaskflow.Subflow) { fibTaskflow(sf, fibN, &res) })
				e.Run(tf).Wait()
				check(b, res)
			}
			pt.stop()
		}))
	}
}

// The DAG: dagLevels levels of dagWidth nodes; node (l, j) for l > 0
// depends on nodes (l-1, j) and (l-1, (j+1) % dagWidth). Nodes are empty:
// the figure is the cost of the graph itself, per node.
const (
	dagLevels = 64
	dagWidth  = 64
	dagNodes  = dagLevels * dagWidth
)

// counterDAG runs the DAG on a pool that has no dependencies of its own:
// each node keeps a count of unfinished predecessors, and the node that
// brings a successor's count to zero submits it. Closures and counters are
// made once; a run resets the counts.
type counterDAG struct {
	pending [dagNodes]atomic.Int32
	run     [dagNodes]func()
	wg      sync.WaitGroup
}

func newCounterDAG(submit func(func())) *counterDAG {
	d := &counterDAG{}
	for k := range dagNodes {
		l, j := k/dagWidth, k%dagWidth
		d.run[k] = func() {
			if l+1 < dagLevels {
				// Successors of (l, j): (l+1, j) and (l+1, j-1).
				for _, s := range [2]int{(l+1)*dagWidth + j, (l+1)*dagWidth + (j+dagWidth-1)%dagWidth} {
					if d.pending[s].Add(-1) == 0 {
						submit(d.run[s])
					}
				}
			}
			d.wg.Done()
		}
	}
	return d
}

func (d *counterDAG) once(submit func(func())) {
	for k := range dagNodes {
		if k < dagWidth {
			d.pending[k].Store(0)
		} else {
			d.pending[k].Store(2)
		}
	}
	d.wg.Add(dagNodes)
	for k := range dagWidth {
		submit(d.run[k])
	}
	d.wg.Wait()
}

// BenchmarkPeersDAG: the 64x64 DAG, exact dependencies; ns/node.
func BenchmarkPeersDAG(b *testing.B) {
	// sched: one dependency per task, so a node that needs two waits for
	// a join: an empty task J depending on (l-1, j), holding an empty
	// child depending on (l-1, j+1); the node depends on J (three tasks
	// per node). The graph is built as it runs, every op.
	b.Run("sched", func(b *testing.B) {
		_, m := peerSched(b)
		var prev, cur [dagWidth]TaskID
		pt := startPerTask(b, dagNodes, "node")
		for range b.N {
			schedDAGOnce(b, m, &prev, &cur)
		}
		pt.stop()
	})
	b.Run("chanpool", func(b *testing.B) {
		// Depth above the node count: a worker's submit never blocks.
		p := newChanPool(runtime.GOMAXPROCS(0), 2*dagNodes)
		defer p.close()
		d := newCounterDAG(p.Go)
		pt := startPerTask(b, dagNodes, "node")
		for range b.N {
			d.once(p.Go)
		}
		pt.stop()
	})
	b.Run("pond", func(b *testing.B) {
		p := newPond(b)
		submit := func(f func()) {
			if err := p.Go(f); err != nil {
				panic(err)
			}
		}
		d := newCounterDAG(submit)
		pt := startPerTask(b, dagNodes, "node")
		for range b.N {
			d.once(submit)
		}
		pt.stop()
	})
	b.Run("ants", func(b *testing.B) {
		// Non-blocking would drop tasks; blocking submits from inside a
		// task could wait for a worker held by the submitter: unbounded.
		p := newAnts(b, -1)
		submit := func(f func()) {
			if err := p.Submit(f); err != nil {
				panic(err)
			}
		}
		d := newCounterDAG(submit)
		pt := startPerTask(b, dagNodes, "node")
		for range b.N {
			d.once(submit)
		}
		pt.stop()
	})
	b.Run("goroutines-channels", func(b *testing.B) {
		// A goroutine per node that receives from its two predecessors'
		// done channels (closed when they finish).
		pt := startPerTask(b, dagNodes, "node")
		for range b.N {
			var done [dagNodes]chan struct{}
			for k := range done {
				done[k] = make(chan struct{})
			}
			var wg sync.WaitGroup
			for k := range dagNodes {
				l, j := k/dagWidth, k%dagWidth
				wg.Go(func() {
					if l > 0 {
						<-done[(l-1)*dagWidth+j]
						<-done[(l-1)*dagWidth+(j+1)%dagWidth]
					}
					close(done[k])
				})
			}
			wg.Wait()
		}
		pt.stop()
	})
	b.Run("waitgroup-levels", func(b *testing.B) {
		// Looser than the DAG: a barrier per level (every node of a level
		// waits for the whole previous level).
		pt := startPerTask(b, dagNodes, "node")
		for range b.N {
			for range dagLevels {
				var wg sync.WaitGroup
				for range dagWidth {
					wg.Go(func() {})
				}
				wg.Wait()
			}
		}
		pt.stop()
	})
	b.Run("taskflow", func(b *testing.B) {
		// A static graph with the exact dependencies, built once.
		e := gotaskflow.NewExecutor(uint(runtime.GOMAXPROCS(0)))
		tf := gotaskflow.NewTaskFlow("dag")
		var prev, cur [dagWidth]*gotaskflow.Task
		for l := range dagLevels {
			for j := range dagWidth {
				cur[j] = tf.NewTask("n", func() {})
				if l > 0 {
					cur[j].Succeed(prev[j], prev[(j+1)%dagWidth])
				}
			}
			prev = cur
		}
		pt := startPerTask(b, dagNodes, "node")
		for range b.N {
			e.Run(tf).Wait()
		}
		pt.stop()
	})
}

// BenchmarkPeersParallelFor: computeRange over 1M and 64K elements;
// ns/elem. The pools get the hand split (one piece per P); the scheduler
// splits at the kernel's grain (4096 elements).
func BenchmarkPeersParallelFor(b *testing.B) {
	for _, n := range []int{1 << 20, 64 << 10} {
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(i)
		}
		name := "1M"
		if n < 1<<20 {
			name = "64K"
		}
		pieces := func(f func(lo, hi int)) {
			p := runtime.GOMAXPROCS(0)
			for w := range p {
				f(n*w/p, n*(w+1)/p)
			}
		}
		b.Run(name+"/goroutines", func(b *testing.B) {
			pt := startPerTask(b, n, "elem")
			for range b.N {
				var wg sync.WaitGroup
				pieces(func(lo, hi int) { wg.Go(func() { computeRange(x, y, lo, hi) }) })
				wg.Wait()
			}
			pt.stop()
		})
		b.Run(name+"/sched", func(b *testing.B) {
			_, m := peerSched(b)
			t := Task{Kernel: pkCompute}
			t.Data.Elements = uint32(n)
			t.Data.In[0] = StreamOf(x)
			t.Data.Out[0] = StreamOf(y)
			pt := startPerTask(b, n, "elem")
			for range b.N {
				id, err := m.Add(&t)
				if err != nil {
					b.Fatal(err)
				}
				must(b, m.Wait(id))
			}
			pt.stop()
		})
		b.Run(name+"/chanpool", func(b *testing.B) {
			p := newChanPool(runtime.GOMAXPROCS(0), 64)
			defer p.close()
			pt := startPerTask(b, n, "elem")
			for range b.N {
				var wg sync.WaitGroup
				pieces(func(lo, hi int) {
					wg.Add(1)
					p.Go(func() { computeRange(x, y, lo, hi); wg.Done() })
				})
				wg.Wait()
			}
			pt.stop()
		})
		b.Run(name+"/pond", func(b *testing.B) {
			p := newPond(b)
			pt := startPerTask(b, n, "elem")
			for range b.N {
				g := p.NewGroup()
				pieces(func(lo, hi int) { g.Submit(func() { computeRange(x, y, lo, hi) }) })
				must(b, g.Wait())
			}
			pt.stop()
		})
		b.Run(name+"/ants", func(b *testing.B) {
			p := newAnts(b, runtime.GOMAXPROCS(0))
			pt := startPerTask(b, n, "elem")
			for range b.N {
				var wg sync.WaitGroup
				pieces(func(lo, hi int) {
					wg.Add(1)
					must(b, p.Submit(func() { computeRange(x, y, lo, hi); wg.Done() }))
				})
				wg.Wait()
			}
			pt.stop()
		})
		b.Run(name+"/errgroup", func(b *testing.B) {
			pt := startPerTask(b, n, "elem")
			for range b.N {
				var g errgroup.Group
				pieces(func(lo, hi int) { g.Go(func() error { computeRange(x, y, lo, hi); return nil }) })
				must(b, g.Wait())
			}
			pt.stop()
		})
		b.Run(name+"/taskflow", func(b *testing.B) {
			runTaskflow(b, "pfor", n, "elem", func(tf *gotaskflow.TaskFlow) {
				pieces(func(lo, hi int) { tf.NewTask("p", func() { computeRange(x, y, lo, hi) }) })
			})
		})
	}
}

// The Mix benchmarks below interleave the rows they compare inside every
// op, as BenchmarkPeersEmptyMix does, so that their ratios hold on cores
// shared with other work: with -count 10, each run gives one ratio.

// BenchmarkPeersFibMix: fib(25) on one scheduler, alternately with
// GOMAXPROCS 1 and 2 (the scheduler's two threads then share one P or get
// one each); reports ns/task for both and the scaling p1/p2, the same for
// fib split with Join (join-...), and the machine's own scaling.
func BenchmarkPeersFibMix(b *testing.B) {
	_, m := peerSched(b)
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	var res uint32
	var t1, t2 time.Duration
	one := func(procs int) time.Duration {
		runtime.GOMAXPROCS(procs)
		t0 := time.Now()
		t := Task{Kernel: pkFib}
		t.Data.Params[0] = fibN
		t.Data.Data = &res
		id, err := m.Add(&t)
		if err != nil {
			b.Fatal(err)
		}
		must(b, m.Wait(id))
		d := time.Since(t0)
		if res != fibWant {
			b.Fatalf("fib(%d) = %d, want %d", fibN, res, fibWant)
		}
		return d
	}
	// The same fib split with Join.
	registerFibJoin(b, m.Scheduler())
	cells := make([]uint32, fibTasks)
	var j1, j2 time.Duration
	join := func(procs int) time.Duration {
		runtime.GOMAXPROCS(procs)
		t0 := time.Now()
		if r := runFibJoin(b, m, fibN, &cells); r != fibWant {
			b.Fatalf("fib(%d) with Join = %d, want %d", fibN, r, fibWant)
		}
		return time.Since(t0)
	}
	// The machine's own scaling at the same moments: a compute loop with
	// no shared data, run on one goroutine and split over two (close to 2
	// on two idle cores); on cores shared with other work it says how much
	// of the second core there was to use.
	const ref = 1 << 17
	x, y := make([]float32, ref), make([]float32, ref)
	var r1, r2 time.Duration
	b.ResetTimer()
	for range b.N {
		t1 += one(1)
		t2 += one(2)
		j1 += join(1)
		j2 += join(2)
		t0 := time.Now()
		computeRange(x, y, 0, ref)
		r1 += time.Since(t0)
		t0 = time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { computeRange(x, y, 0, ref/2) })
		computeRange(x, y, ref/2, ref)
		wg.Wait()
		r2 += time.Since(t0)
	}
	b.StopTimer()
	n := float64(b.N) * fibTasks
	b.ReportMetric(float64(t1.Nanoseconds())/n, "p1-ns/task")
	b.ReportMetric(float64(t2.Nanoseconds())/n, "p2-ns/task")
	b.ReportMetric(float64(t1)/float64(t2), "p1/p2")
	b.ReportMetric(float64(j1.Nanoseconds())/n, "join-p1-ns/task")
	b.ReportMetric(float64(j2.Nanoseconds())/n, "join-p2-ns/task")
	b.ReportMetric(float64(j1)/float64(j2), "join-p1/p2")
	b.ReportMetric(float64(r1)/float64(r2), "machine-1/2")
}

// BenchmarkPeersParallelForMix: the scheduler's parallel-for and the
// hand-split goroutines in turn, at 1M and 64K elements; reports the
// ratios sched/goroutines.
func BenchmarkPeersParallelForMix(b *testing.B) {
	for _, n := range []int{1 << 20, 64 << 10} {
		name := "1M"
		if n < 1<<20 {
			name = "64K"
		}
		b.Run(name, func(b *testing.B) {
			x := make([]float32, n)
			y := make([]float32, n)
			_, m := peerSched(b)
			t := Task{Kernel: pkCompute}
			t.Data.Elements = uint32(n)
			t.Data.In[0] = StreamOf(x)
			t.Data.Out[0] = StreamOf(y)
			p := runtime.GOMAXPROCS(0)
			var ts, tg time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				id, err := m.Add(&t)
				if err != nil {
					b.Fatal(err)
				}
				must(b, m.Wait(id))
				t1 := time.Now()
				var wg sync.WaitGroup
				for w := range p {
					lo, hi := n*w/p, n*(w+1)/p
					wg.Go(func() { computeRange(x, y, lo, hi) })
				}
				wg.Wait()
				ts, tg = ts+t1.Sub(t0), tg+time.Since(t1)
			}
			b.StopTimer()
			b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N*n), "sched-ns/elem")
			b.ReportMetric(float64(tg.Nanoseconds())/float64(b.N*n), "goroutines-ns/elem")
			b.ReportMetric(float64(ts)/float64(tg), "sched/goroutines")
		})
	}
}

// BenchmarkPeersDAGMix: the scheduler's DAG (joins, built as it runs) and
// the channel pool's (counters, built once) in turn; ns/node for both.
func BenchmarkPeersDAGMix(b *testing.B) {
	_, m := peerSched(b)
	cp := newChanPool(runtime.GOMAXPROCS(0), 2*dagNodes)
	defer cp.close()
	d := newCounterDAG(cp.Go)
	var prev, cur [dagWidth]TaskID
	var ts, tc time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		schedDAGOnce(b, m, &prev, &cur)
		t1 := time.Now()
		d.once(cp.Go)
		ts, tc = ts+t1.Sub(t0), tc+time.Since(t1)
	}
	b.StopTimer()
	n := float64(b.N) * dagNodes
	b.ReportMetric(float64(ts.Nanoseconds())/n, "sched-ns/node")
	b.ReportMetric(float64(tc.Nanoseconds())/n, "chanpool-ns/node")
	b.ReportMetric(float64(ts)/float64(tc), "sched/chanpool")
}

// BenchmarkEmptyDequeMix: the slow mode of empty tasks and its cause. Two
// schedulers, one with the old default deque (1024 per level) and one with
// the current default (the pool size), run a round of 10,000 empty tasks
// each in turn; reports both and the ratio old/new. With 1024, a main
// thread that added faster than the worker stole spilled most of its
// tasks into the shared queue (TestDequeHoldsBurst).
func BenchmarkEmptyDequeMix(b *testing.B) {
	mk := func(deque int) *Ctx {
		reg := NewRegistry()
		must(b, reg.Register(pkEmpty, Kernel{Name: "empty", CPU: func(*Ctx, *TaskData) error { return nil }}))
		s, err := New(Config{Kernels: reg, DequeSize: deque})
		must(b, err)
		b.Cleanup(func() { s.Close() })
		m, err := s.RegisterThread("main")
		must(b, err)
		return m
	}
	old, cur := mk(1024), mk(0)
	round := func(m *Ctx) time.Duration {
		t0 := time.Now()
		root, err := m.Create(&Task{})
		if err != nil {
			b.Fatal(err)
		}
		task := Task{Kernel: pkEmpty, Parent: root}
		for range peerTasks {
			if _, err := m.Add(&task); err != nil {
				b.Fatal(err)
			}
		}
		must(b, m.Run(root))
		must(b, m.Wait(root))
		return time.Since(t0)
	}
	var to, tn time.Duration
	b.ResetTimer()
	for range b.N {
		to += round(old)
		tn += round(cur)
	}
	b.StopTimer()
	n := float64(b.N) * peerTasks
	b.ReportMetric(float64(to.Nanoseconds())/n, "deque1024-ns/task")
	b.ReportMetric(float64(tn.Nanoseconds())/n, "default-ns/task")
	b.ReportMetric(float64(to)/float64(tn), "old/new")
}

// schedDAGOnce builds and runs the 64x64 DAG once on the scheduler: level 0
// is dagWidth empty tasks; node (l, j) depends on a join, an empty task J
// depending on (l-1, j) and holding an empty child depending on
// (l-1, j+1), so every node waits for two of the previous level (three
// tasks per node). All of it hangs under one held root, waited for at the
// end. prev and cur are the caller's, so that the ops allocate nothing.
func schedDAGOnce(b *testing.B, m *Ctx, prev, cur *[dagWidth]TaskID) {
	root, err := m.Create(&Task{})
	if err != nil {
		b.Fatal(err)
	}
	node := Task{Kernel: pkEmpty, Parent: root}
	for j := range dagWidth {
		if cur[j], err = m.Add(&node); err != nil {
			b.Fatal(err)
		}
	}
	for l := 1; l < dagLevels; l++ {
		*prev = *cur
		for j := range dagWidth {
			join, err := m.Create(&Task{Dependency: prev[j]})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.Add(&Task{Parent: join, Dependency: prev[(j+1)%dagWidth]}); err != nil {
				b.Fatal(err)
			}
			if err := m.Run(join); err != nil {
				b.Fatal(err)
			}
			node.Dependency = join
			if cur[j], err = m.Add(&node); err != nil {
				b.Fatal(err)
			}
		}
	}
	must(b, m.Run(root))
	must(b, m.Wait(root))
}

// runTaskflow times go-taskflow running a graph that build makes once, on
// an executor of GOMAXPROCS goroutines, per op, reporting ns per unit
// (units of them per run).
func runTaskflow(b *testing.B, name string, units int, unit string, build func(*gotaskflow.TaskFlow)) {
	e := gotaskflow.NewExecutor(uint(runtime.GOMAXPROCS(0)))
	tf := gotaskflow.NewTaskFlow(name)
	build(tf)
	pt := startPerTask(b, units, unit)
	for range b.N {
		e.Run(tf).Wait()
	}
	pt.stop()
}
