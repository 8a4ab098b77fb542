package gpu

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// A kernel may refuse a task on a device (bind.Binding.Admit): the
// executor asks it before planning each job, and before each run of a
// graph segment for the segment's nodes, and fails a refused task (a
// refused node alone) with ErrRefused and the kernel's reason, without
// dispatching it. The hook is the kernel's, not the scheduler's: sched
// names no GPU package, and what a device computes wrong is a property of
// a shader on that device (package anim refuses a blob whose clips could
// need more loop passes than lavapipe's budget). Rejected: a check in the
// kernel's Go code when it builds the task (it does not know which device
// will run it, nor whether the placer sends it to the GPU at all), and
// clamping inside the shader (the pose would still be wrong, silently).
//
// The device's loop budget: llvmpipe (lavapipe's compiler, gallivm)
// guards against endless loops with one counter per invocation (per SIMD
// vector of invocations run together), set once at the shader's start to
// LP_MAX_TGSI_LOOP_ITERATIONS and decremented at every pass of every loop
// that a lane of the vector reaches; once it reaches zero every loop
// leaves after its current pass. A shader whose loops pass that many times
// in all, or more, is not stopped or reported: its later loops simply run
// at most once (TestLavapipeLoopBudgetIsSharedByLoopsAndLanes: loops that
// pass one time fewer in all are exact; a pass that only tests a loop's
// exit took none there, but a bound that counts it as one is safe whatever
// shape the compiler gives the loop). Package gpu recognises llvmpipe by
// its device name.

// ErrRefused: the task's kernel refused it on this device
// (bind.Binding.Admit); the error also wraps the kernel's reason.
var ErrRefused = errors.New("gpu: the kernel refused the task on this device")

// LavapipeLoopBudget is llvmpipe's loop budget per invocation
// (LP_MAX_TGSI_LOOP_ITERATIONS in Mesa's gallivm): bind.Device.LoopBudget
// on lavapipe.
const LavapipeLoopBudget = 65535

// loopBudgetOf returns the loop budget of the device of that name: 0 (no
// known limit) but on llvmpipe.
func loopBudgetOf(name string) uint32 {
	if strings.Contains(name, "llvmpipe") {
		return LavapipeLoopBudget
	}
	return 0
}

// LoopBudget returns the loop passes one invocation may take in all on
// this device before its loops silently stop early (bind.Device.LoopBudget):
// LavapipeLoopBudget on lavapipe, 0 where no such limit is known.
func (d *Device) LoopBudget() uint32 { return loopBudgetOf(d.Name()) }

// admit asks k's binding whether it runs td on the executor's device
// (bind.Binding.Admit). It allocates nothing when the kernel admits. A
// panic in Admit is the task's error (ErrExecutorPanic, naming the
// kernel), so that it fails that task alone, as a refusal does: a graph
// node, too, where a panic unwinding into the segment's submission would
// fail every member of the segment.
func (e *Executor) admit(k *sched.Kernel, td *sched.TaskData) (err error) {
	b := bind.Of(k)
	if b == nil || b.Admit == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			stage := fmt.Sprintf("in the Admit of kernel %q on %q", k.Name, e.bdev.Name)
			if re, ok := r.(error); ok {
				err = fmt.Errorf("%w %s: %w\n%s", ErrExecutorPanic, stage, re, debug.Stack())
			} else {
				err = fmt.Errorf("%w %s: %v\n%s", ErrExecutorPanic, stage, r, debug.Stack())
			}
		}
	}()
	if err := b.Admit(&e.bdev, td); err != nil {
		return fmt.Errorf("%w: kernel %q on %q: %w", ErrRefused, k.Name, e.bdev.Name, err)
	}
	return nil
}
