package gpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// errBurstRefused is the reason admitSaxpy gives.
var errBurstRefused = errors.New("saxpy with Params[1] = 1 is refused here")

// admitSaxpy sets the saxpy kernel's Admit: Params[1] 1 refuses, 2
// panics, anything else admits.
func admitSaxpy(reg *sched.Registry) {
	reg.Lookup(kSaxpy).GPU.(*Binding).Admit = func(_ *bind.Device, td *sched.TaskData) error {
		switch td.Params[1] {
		case 1:
			return errBurstRefused
		case 2:
			panic("saxpy Admit panics on Params[1] = 2")
		}
		return nil
	}
}

// waitWithin fails the test when f does not return within 10 s.
func waitWithin(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting after 10 s", what)
	}
}

// Tasks added back to back, some of which their kernel refuses (and some
// whose Admit panics), go out together: the admitted ones run and write
// their outputs, the refused ones fail with ErrRefused (the panicking ones
// with ErrExecutorPanic) and leave their outputs as they were, the CPU
// dependents of a refused task fail without running and those of an
// admitted one run; the executor serves the next burst.
func TestKernelAdmitRefusedAmidBurst(t *testing.T) {
	for _, staging := range []bool{false, true} {
		t.Run(fmt.Sprintf("staging=%v", staging), func(t *testing.T) { admitRefusedAmidBurst(t, staging) })
	}
}

func admitRefusedAmidBurst(t *testing.T, staging bool) {
	reg := testRegistry(t)
	admitSaxpy(reg)
	var ran [32]int
	must(t, reg.Register(160, sched.Kernel{Name: "after", CPU: func(_ *sched.Ctx, td *sched.TaskData) error {
		ran[td.Params[0]]++
		return nil
	}}))
	e := newEnv(t, device(t, staging), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const n, w = 24, 300
	x, y := ramp(w, 1, 0), ramp(w, 0.5, 1)
	for burst := range 2 {
		st0 := e.exec.Stats()
		zs := make([][]float32, n)
		ids := make([]sched.TaskID, n)
		deps := make([]sched.TaskID, n)
		for i := range n {
			zs[i] = make([]float32, w)
			for j := range zs[i] {
				zs[i][j] = -7
			}
			tk := saxpyTask(2, x, y, zs[i])
			tk.Data.Params[1] = uint32(i % 3) // 0 admitted, 1 refused, 2 Admit panics
			ids[i] = e.add(t, tk)
		}
		for i := range n {
			d := sched.Task{Kernel: 160, Dependency: ids[i]}
			d.Data.Params[0] = uint32(i)
			deps[i] = e.add(t, d)
		}
		waitWithin(t, fmt.Sprintf("burst %d", burst), func() {
			for i := range n {
				err := e.s.Wait(ids[i])
				derr := e.s.Wait(deps[i])
				switch i % 3 {
				case 0:
					if err != nil {
						t.Errorf("burst %d: admitted task %d: %v", burst, i, err)
					} else if err := saxpyRef(fmt.Sprintf("admitted task %d", i), 2, x, y, zs[i]); err != nil {
						t.Errorf("burst %d: %v", burst, err)
					}
					if derr != nil {
						t.Errorf("burst %d: dependent of admitted task %d: %v", burst, i, derr)
					}
				case 1, 2:
					want := ErrRefused
					if i%3 == 2 {
						want = ErrExecutorPanic
					}
					if !errors.Is(err, want) {
						t.Errorf("burst %d: task %d: err %v, want %v", burst, i, err, want)
					}
					for j, v := range zs[i] {
						if v != -7 {
							t.Errorf("burst %d: refused task %d: output element %d is %v: dispatched", burst, i, j, v)
							break
						}
					}
					if !errors.Is(derr, sched.ErrDepFailed) {
						t.Errorf("burst %d: dependent of refused task %d: err %v, want ErrDepFailed", burst, i, derr)
					}
				}
			}
		})
		st := e.exec.Stats()
		t.Logf("burst %d: %d tasks in %d submissions", burst, st.Tasks-st0.Tasks, st.Submits-st0.Submits)
		if st.Tasks-st0.Tasks != n/3 || st.Failed-st0.Failed != 2*n/3 {
			t.Errorf("burst %d: executor tasks %d, failed %d; want %d dispatched, %d failed", burst, st.Tasks-st0.Tasks, st.Failed-st0.Failed, n/3, 2*n/3)
		}
		for i := range n {
			want := burst + 1
			if i%3 != 0 {
				want = 0
			}
			if ran[i] != want {
				t.Errorf("after burst %d: dependent %d ran %d times, want %d", burst, i, ran[i], want)
			}
		}
	}
}

// A graph segment whose every member its kernel refuses completes (no
// hang), fails naming a refused node, dispatches nothing, and counts a
// failure per member; once SetData makes them admissible the next run
// computes every member right, and refusing them all again works too.
func TestKernelAdmitRefusesEveryMember(t *testing.T) {
	reg := testRegistry(t)
	admitSaxpy(reg)
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const members, w = 3, 128
	sg := newSegGraph(t, e, members, w)
	set := func(p uint32) {
		for i, nd := range sg.nodes {
			tk := saxpyTask(2, sg.x, sg.y, sg.z[i])
			tk.Data.Params[1] = p
			must(t, sg.g.SetData(nd, &tk.Data))
		}
	}
	for round := range 3 {
		set(1)
		for k := range sg.z {
			for j := range sg.z[k] {
				sg.z[k][j] = -7
			}
		}
		st0 := e.exec.Stats()
		var err error
		waitWithin(t, "run with every member refused", func() { err = sg.g.Run() })
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "graph node") {
			t.Fatalf("round %d: every member refused: err %v, want ErrRefused naming a node", round, err)
		}
		for k := range sg.z {
			for j, v := range sg.z[k] {
				if v != -7 {
					t.Fatalf("round %d: refused member %d wrote element %d = %v", round, k, j, v)
				}
			}
		}
		if st := e.exec.Stats(); st.Failed-st0.Failed != members || st.Tasks != st0.Tasks {
			t.Errorf("round %d: failed %d, tasks %d; want %d failures, no task", round, st.Failed-st0.Failed, st.Tasks-st0.Tasks, members)
		}
		set(0)
		waitWithin(t, "run admitted again", func() { err = sg.g.Run() })
		must(t, err)
		for k := range sg.z {
			sg.want(t, fmt.Sprintf("round %d: member %d admitted again", round, k), 2, sg.z[k])
		}
	}
}

// A member refused on one run and given, by SetData, another output
// buffer and admissible Params on the next is planned again: the new
// buffer gets the result, the old one stays as it was, and later runs
// replay with the new binding.
func TestKernelAdmitRefusedThenRepointed(t *testing.T) {
	reg := testRegistry(t)
	admitSaxpy(reg)
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const w = 200
	sg := newSegGraph(t, e, 3, w)
	sg.run(t, e)
	tk := saxpyTask(2, sg.x, sg.y, sg.z[1])
	tk.Data.Params[1] = 1
	must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
	if err := sg.g.RunCtx(e.main); !errors.Is(err, ErrRefused) {
		t.Fatalf("refused member: err %v", err)
	}
	old := sg.z[1]
	for j := range old {
		old[j] = -3
	}
	z2 := make([]float32, w)
	nanFill(z2)
	tk = saxpyTask(3, sg.x, sg.y, z2)
	must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
	for r := range 3 {
		nanFill(z2)
		sg.run(t, e)
		if err := saxpyRef(fmt.Sprintf("run %d: repointed member", r), 3, sg.x, sg.y, z2); err != nil {
			t.Fatal(err)
		}
		for j, v := range old {
			if v != -3 {
				t.Fatalf("run %d: the member's old output element %d = %v: still bound", r, j, v)
			}
		}
		sg.want(t, "member 0", 2, sg.z[0])
		sg.want(t, "member 2", 2, sg.z[2])
	}
}

// A kernel's Admit that panics on a graph member fails that member alone,
// as a refusal does (and as a panicking plan does on the dynamic path):
// the other members of its segment run, and the executor keeps running
// the graph once the member is admissible again.
func TestKernelAdmitPanicFailsMemberAlone(t *testing.T) {
	reg := testRegistry(t)
	admitSaxpy(reg)
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	sg := newSegGraph(t, e, 3, 128)
	sg.run(t, e)
	for _, planned := range []bool{true, false} {
		tk := saxpyTask(2, sg.x, sg.y, sg.z[1])
		tk.Data.Params[1] = 2
		if !planned { // a new binding: the panic is met while planning
			tk.Data.Out[0] = sched.StreamOf(make([]float32, 128))
		}
		must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
		for k := range sg.z {
			nanFill(sg.z[k])
		}
		var err error
		waitWithin(t, "run with a panicking Admit", func() { err = sg.g.Run() })
		if !errors.Is(err, ErrExecutorPanic) || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", sg.nodes[1])) {
			t.Errorf("planned %v: err %v, want ErrExecutorPanic naming graph node %d", planned, err, sg.nodes[1])
		}
		if err := saxpyRef("member 0 beside a panicking Admit", 2, sg.x, sg.y, sg.z[0]); err != nil {
			t.Errorf("planned %v: %v", planned, err)
		}
		if err := saxpyRef("member 2 beside a panicking Admit", 2, sg.x, sg.y, sg.z[2]); err != nil {
			t.Errorf("planned %v: %v", planned, err)
		}
		tk = saxpyTask(2, sg.x, sg.y, sg.z[1])
		must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
		sg.run(t, e)
		for k := range sg.z {
			sg.want(t, fmt.Sprintf("planned %v: member %d after the panic", planned, k), 2, sg.z[k])
		}
	}
}

// Replaying a graph whose GPU kernel has an Admit that admits allocates
// nothing: the check made at each run is free.
func TestKernelAdmitGraphReplayAllocs(t *testing.T) {
	reg := testRegistry(t)
	admitSaxpy(reg)
	simpleK(t, reg, 161, "cpu", func() error { return nil })
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const w = 128
	x, y := ramp(w, 1, 0), ramp(w, 1, 1)
	g := e.s.NewGraph()
	A := gAdd(t, g, sched.Task{Kernel: 161})
	G1 := gAdd(t, g, saxpyTask(2, x, y, make([]float32, w)), A)
	G2 := gAdd(t, g, saxpyTask(2, x, y, make([]float32, w)), A)
	gAdd(t, g, sched.Task{Kernel: 161}, G1, G2)
	for range 3 {
		must(t, g.RunCtx(e.main))
	}
	if a := testing.AllocsPerRun(50, func() { must(t, g.RunCtx(e.main)) }); a != 0 {
		t.Fatalf("%v allocations per run", a)
	}
}

// A refused member's CPU successors do not run, even one that also
// follows a member that ran, while a successor of only the member that
// ran does; the run ends (no hang) with the refusal, and the next run with
// both admitted runs every node.
func TestKernelAdmitRefusedMemberSharedSuccessor(t *testing.T) {
	reg := testRegistry(t)
	admitSaxpy(reg)
	ranBoth, ranGood := 0, 0
	simpleK(t, reg, 162, "afterBoth", func() error { ranBoth++; return nil })
	simpleK(t, reg, 163, "afterGood", func() error { ranGood++; return nil })
	simpleK(t, reg, 164, "pre", func() error { return nil })
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const w = 64
	x, y := ramp(w, 1, 0), ramp(w, 1, 1)
	zr, zg := make([]float32, w), make([]float32, w)
	g := e.s.NewGraph()
	p := gAdd(t, g, sched.Task{Kernel: 164})
	rt := saxpyTask(2, x, y, zr)
	rt.Data.Params[1] = 1
	refused := gAdd(t, g, rt, p)
	good := gAdd(t, g, saxpyTask(2, x, y, zg), p)
	gAdd(t, g, sched.Task{Kernel: 162}, refused, good)
	gAdd(t, g, sched.Task{Kernel: 163}, good)
	for r := range 2 {
		var err error
		waitWithin(t, "run with a refused member", func() { err = g.Run() })
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("run %d: err %v, want ErrRefused", r, err)
		}
		if ranBoth != 0 || ranGood != r+1 {
			t.Fatalf("run %d: the successor of both members ran %d times (want 0), that of the good one %d (want %d)", r, ranBoth, ranGood, r+1)
		}
		if err := saxpyRef("good member", 2, x, y, zg); err != nil {
			t.Fatal(err)
		}
	}
	rt.Data.Params[1] = 0
	must(t, g.SetData(refused, &rt.Data))
	var err error
	waitWithin(t, "run with both admitted", func() { err = g.Run() })
	must(t, err)
	if ranBoth != 1 || ranGood != 3 {
		t.Fatalf("both admitted: successors ran %d and %d times, want 1 and 3", ranBoth, ranGood)
	}
	if err := saxpyRef("the member admitted again", 2, x, y, zr); err != nil {
		t.Fatal(err)
	}
}
