package gpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestGraphGPUSegmentOneSubmit: a frame graph whose CPU node readies
// eight GPU nodes (a segment), replayed: each run sends the segment in
// one command buffer (the runner brackets its hand-offs in a burst), the
// CPU node after the segment sees every GPU result, and re-pointed
// parameters reach the GPU on the next run.
func TestGraphGPUSegmentOneSubmit(t *testing.T) {
	reg := testRegistry(t)
	const kPre, kPost sched.KernelID = 120, 121
	const n, width = 8, 256
	var pre, post int
	must(t, reg.Register(kPre, sched.Kernel{Name: "pre", CPU: func(*sched.Ctx, *sched.TaskData) error { pre++; return nil }}))
	ys := make([][]float32, n)
	x := ramp(width, 1, 0)
	yIn := ramp(width, 1, 1)
	var sumErr error
	var a float32 = 2
	must(t, reg.Register(kPost, sched.Kernel{Name: "post", CPU: func(*sched.Ctx, *sched.TaskData) error {
		post++
		for i, y := range ys {
			for j := range y {
				if want := a*x[j] + yIn[j]; y[j] != want {
					sumErr = fmt.Errorf("run %d: node %d element %d = %v, want %v", post, i, j, y[j], want)
					return sumErr
				}
			}
		}
		return nil
	}}))
	e := newEnv(t, device(t, false), ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	warm := saxpyTask(1, x, yIn, make([]float32, width))
	must(t, e.main.Wait(e.add(t, warm))) // the pipeline exists before counting

	g := e.s.NewGraph()
	p, err := g.Add(&sched.Task{Kernel: kPre})
	must(t, err)
	q, err := g.Add(&sched.Task{Kernel: kPost})
	must(t, err)
	var nodes []sched.GraphNode
	for i := range ys {
		ys[i] = make([]float32, width)
		tk := saxpyTask(a, x, yIn, ys[i])
		nd, err := g.Add(&tk)
		must(t, err)
		must(t, g.Precede(p, nd))
		must(t, g.Precede(nd, q))
		nodes = append(nodes, nd)
	}
	for run := 1; run <= 4; run++ {
		if run == 3 {
			a = 5 // re-point the parameter of every GPU node
			for _, nd := range nodes {
				g.Params(nd)[0] = math.Float32bits(a)
			}
		}
		for i := range ys {
			clear(ys[i])
		}
		st0 := e.exec.Stats()
		must(t, g.RunCtx(e.main))
		st := e.exec.Stats()
		if sumErr != nil {
			t.Fatal(sumErr)
		}
		if got := st.Submits - st0.Submits; got != 1 {
			t.Errorf("run %d: %d submits for the segment of %d GPU nodes, want 1", run, got, n)
		}
		if got := st.Tasks - st0.Tasks; got != n {
			t.Errorf("run %d: %d GPU tasks completed, want %d", run, got, n)
		}
	}
	if pre != 4 || post != 4 {
		t.Fatalf("pre ran %d times, post %d; want 4 each", pre, post)
	}
}
