// Package spu is an SPU-style local-store executor for package sched:
// each task's streams are staged chunk by chunk into a fixed-size local
// store by a DMA goroutine, double-buffered, and the kernel runs on the
// local copy, so that a kernel sees only the memory its task declared and
// the cost of that discipline is measured. It depends on package sched
// only.
//
// Executor is a sched.Executor (attach as sched.ExecSPU) that runs streaming,
// reduce and expand tasks the way a Cell SPU did. Each unit owns a local
// store (256 KiB by default; New refuses more than MaxLocalStore bytes for
// all units together, or more than MaxUnits units) and a DMA goroutine. The task's Whole streams
// are copied into the store once (Whole outputs are copied back at the
// end); the rest of the store holds two buffers of a chunk of every
// per-item stream. While the kernel computes chunk i in one buffer, the
// DMA goroutine has copied chunk i+1 into the other, and copies chunk i
// out before it fetches chunk i+2 into the same buffer; its commands run
// in order, so no buffer is overwritten early. Outputs start zeroed in the
// store. When two buffers of even one item do not fit, one buffer is used
// and nothing overlaps (Stats.SingleBuffered); when even one item beside
// the Whole streams does not fit, the task fails with ErrMisfit and an
// error naming the kernel and the sizes.
//
// The kernel's CPU function runs on a TaskData whose streams are the
// local copies: Begin is 0, End and Elements are the chunk's item count,
// per-item streams hold just the chunk, Whole streams hold everything,
// and Params and Data are the task's. Since sched kernels index streams
// with absolute item numbers from Begin to End, they index the local
// copies correctly; the rule for a kernel to run under the SPU executor is
// that its result for an item must not depend on the item's number other
// than through that indexing. Kernels that need the absolute number opt in
// with an Binding in sched.Kernel.SPU: UseBase writes each chunk's
// first absolute item into Params[BaseParam]. ItemIn marks Whole-rate
// inputs that are really indexed by item (kernels.SkinLBS's vertices when
// Params[0] = 0, one vertex per item), to be streamed in chunks. Kernels
// get a nil *sched.Ctx (an SPU cannot add tasks or wait), and streams must
// have host bytes (ErrStream otherwise). Stats reports the bytes moved,
// the chunks, the time in kernels and in copies, and the time the kernel
// waited for a copy (what double buffering did not hide). A kernel's error,
// panic or runtime.Goexit fails its task (a panic or Goexit with
// sched.ErrKernelPanic), as on CPU workers, and the unit goes on with the
// next job. The unit reports each task to the scheduler's Observer
// (RunEvent with Thread -1, Where sched.SPU) before it completes the job:
// a panic there fails the task with sched.ErrObserverPanic, as on CPU
// workers, instead of ending the process. Close lets the units finish
// every queued job and returns when all goroutines exited.
package spu
