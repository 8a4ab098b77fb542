package gpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// errNotHere is the reason refusingSaxpy gives.
var errNotHere = errors.New("saxpy with Params[1] = 1 is refused here")

// refusingSaxpy gives the saxpy kernel of reg an Admit that refuses the
// tasks whose Params[1] is 1, recording the device it was told of.
func refusingSaxpy(reg *sched.Registry, seen *bind.Device) {
	reg.Lookup(kSaxpy).GPU.(*Binding).Admit = func(dev *bind.Device, td *sched.TaskData) error {
		*seen = *dev
		if td.Params[1] == 1 {
			return errNotHere
		}
		return nil
	}
}

// A kernel's Admit refuses a task on the device: the task fails with
// ErrRefused and the kernel's reason, naming the kernel, and nothing is
// dispatched (its output keeps its bytes); a task it admits runs; Admit is
// told the device's name and loop budget, and admitting allocates nothing.
func TestKernelAdmitRefusesTask(t *testing.T) {
	dev := device(t, false)
	reg := testRegistry(t)
	var seen bind.Device
	refusingSaxpy(reg, &seen)
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	const n = 256
	x, y := ramp(n, 1, 0), ramp(n, 0.5, 1)
	z := make([]float32, n)
	for i := range z {
		z[i] = -7
	}
	tk := saxpyTask(2, x, y, z)
	tk.Data.Params[1] = 1
	st0 := e.exec.Stats()
	err := e.main.Wait(e.add(t, tk))
	if !errors.Is(err, ErrRefused) || !errors.Is(err, errNotHere) || !strings.Contains(err.Error(), `"saxpy"`) {
		t.Fatalf("refused task: err %v, want ErrRefused wrapping the kernel's reason and naming the kernel", err)
	}
	for i, v := range z {
		if v != -7 {
			t.Fatalf("refused task: element %d of its output is %v: it was dispatched", i, v)
		}
	}
	if st := e.exec.Stats(); st.Tasks != st0.Tasks || st.Failed != st0.Failed+1 {
		t.Errorf("refused task: executor tasks %d -> %d, failed %d -> %d; want no task and one failure", st0.Tasks, st.Tasks, st0.Failed, st.Failed)
	}
	if want := (bind.Device{Name: dev.Name(), LoopBudget: dev.LoopBudget()}); seen != want {
		t.Errorf("Admit was told %+v, want %+v", seen, want)
	}

	tk.Data.Params[1] = 0
	must(t, e.main.Wait(e.add(t, tk)))
	for i := range z {
		if want := 2*x[i] + y[i]; z[i] != want {
			t.Fatalf("admitted task: element %d = %v, want %v", i, z[i], want)
		}
	}
	k := reg.Lookup(kSaxpy)
	if a := testing.AllocsPerRun(100, func() { _ = e.exec.admit(k, &tk.Data) }); a != 0 {
		t.Errorf("admitting a task allocates %v times", a)
	}
}

// A graph node its kernel refuses fails alone, naming the node, and the
// segment's other nodes run; the check is made again at each run, so a
// node refused after a change of its Params only (no new plan needed for
// the recording) is refused too, and admitted again once they change back.
func TestKernelAdmitRefusesGraphNode(t *testing.T) {
	dev := device(t, false)
	reg := testRegistry(t)
	var seen bind.Device
	refusingSaxpy(reg, &seen)
	e := newEnv(t, dev, ExecutorOptions{}, sched.Config{Kernels: reg, Workers: 1})
	sg := newSegGraph(t, e, 3, 128)
	sg.run(t, e)
	sg.run(t, e) // recorded, then replayed

	tk := saxpyTask(2, sg.x, sg.y, sg.z[1])
	tk.Data.Params[1] = 1
	must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
	for k := range sg.z {
		clear(sg.z[k])
	}
	err := sg.g.RunCtx(e.main)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), fmt.Sprintf("graph node %d", sg.nodes[1])) {
		t.Fatalf("run with node %d refused: err %v, want ErrRefused naming the node", sg.nodes[1], err)
	}
	sg.want(t, "node 0 beside a refused node", 2, sg.z[0])
	sg.want(t, "node 2 beside a refused node", 2, sg.z[2])
	for j, v := range sg.z[1] {
		if v != 0 {
			t.Fatalf("the refused node's output element %d is %v: it was dispatched", j, v)
		}
	}

	tk.Data.Params[1] = 0
	must(t, sg.g.SetData(sg.nodes[1], &tk.Data))
	sg.run(t, e)
	for k := range sg.z {
		sg.want(t, fmt.Sprintf("node %d admitted again", k), 2, sg.z[k])
	}
}

// llvmpipe is recognised by its device name; other devices have no loop
// budget.
func TestLoopBudgetOfDeviceName(t *testing.T) {
	for name, want := range map[string]uint32{
		"llvmpipe (LLVM 15.0.6, 256 bits)":     LavapipeLoopBudget,
		"llvmpipe (LLVM 19.1.7, 128 bits)":     LavapipeLoopBudget,
		"AMD Radeon RX 7900 XTX (RADV NAVI31)": 0,
		"NVIDIA GeForce RTX 4090":              0,
		"SwiftShader Device (Subzero)":         0,
	} {
		if got := loopBudgetOf(name); got != want {
			t.Errorf("loopBudgetOf(%q) = %d, want %d", name, got, want)
		}
	}
}
