// Package affinity decides where work may and should run: the CPU topology
// and thread pinning, task affinity masks for command lines, a learned
// CPU/GPU placement policy for Auto tasks (Placer), and an SPU-style
// local-store executor (SPU). It depends on package sched only; it never
// links Vulkan (its tests and benchmarks use package gpu on lavapipe).
//
// # Topology
//
// Discover reads the logical CPUs this process may use and how they share
// physical cores: the allowed set is the process's affinity mask
// (sched_getaffinity, read at start-up), which reflects taskset, cgroup
// cpusets and container limits; NumCPU is not used, because a container
// may see 64 CPUs and be allowed 3 of them. Cores come from sysfs
// (/sys/devices/system/cpu/cpuN/topology: core_cpus_list or
// thread_siblings_list, physical_package_id); without them each CPU counts
// as its own core, and Topology.Source says so. The cgroup CPU quota
// (cpu.max, or cfs_quota_us) is reported as Topology.Quota: a container
// limited to 1.5 CPUs sees every allowed CPU but should size its worker
// pool by the quota.
//
// CPU sets are CPUSet, a bit set of any length: unix.CPUSet holds 1024
// CPUs and silently ignores larger IDs; CPUSet.ToUnix refuses such a set
// with ErrCPUSetTooLarge instead of truncating it, and this package's
// system calls pass the kernel a mask as long as it needs (it retries
// sched_getaffinity with a doubled buffer while the kernel says EINVAL).
//
// # Pinning
//
// Pinning is off unless asked for. It acts on an OS thread, so it is only
// meaningful for a goroutine locked to its thread with
// runtime.LockOSThread: an unlocked goroutine moves
// between threads, and a pinned thread left to the Go scheduler runs
// arbitrary goroutines on one CPU. PinCurrentThread(cpu) pins the calling
// thread and fails (ErrNotAllowed) for a CPU outside the allowed set;
// LockAndPin locks, pins, and returns a function that restores the mask
// and unlocks. Plan(topo, workers) lists a CPU per worker, one per
// physical core first, then the SMT siblings. A Pinner applies a plan from
// the scheduler's worker-start hook (sched.Config.OnWorkerStart): it locks
// each worker goroutine for its whole life, so a pinned thread exits with
// its worker and never serves other goroutines.
//
// # Affinity masks
//
// Mask is a sched.Affinity that parses and prints "cpu", "gpu", "spu",
// "auto" and "thread:N", and is a flag.Value.
//
// # Learned placement
//
// A Placer is the scheduler's Placer and Observer. When an Auto task
// becomes runnable, Place predicts, for each device that can run it (CPU
// workers; the GPU if the kernel has a GPU binding and an executor is
// attached; the SPU executor if given in PlacerOptions.SPU and the task
// fits its local store), the task's finish: the predicted
// work already queued there (tracked placements not yet completed) plus
// the predicted service time, and returns the earliest.
//
// The model is per (kernel, device): service time = latency + per-item
// time x effective items, transfers included, where effective items are
// the items one CPU thread gets (n / min(threads, pieces of a grain)) on
// the CPU and n elsewhere. It is learned from completed Auto tasks only:
// the Placer tracks each placement and the scheduler's RunEvents for it
// (CPU pieces, matched by kernel, item range and parent task; executor
// jobs by kernel and range; an invocation that started before the
// placement is never matched), and when the last piece completed it
// learns the service time: from the placement (or, if the device was busy
// with earlier tracked work, from when the task's work began) to the end
// of the last piece. For the GPU executor that is the end of the dispatch
// (its timestamp on the host clock), which leaves out the read-back and
// the fence's signal (~50-100 us on lavapipe) but, unlike the time of the
// executor's report, not the load of the machine. The first run of a
// kernel on each device (shader compilation, memory growth) is not learned
// from.
//
// Each size class (item counts from 2^(c-1) to 2^c - 1) keeps a robust
// estimate: the median of its first three samples, then an exponentially
// decaying average in which a faster run lowers the estimate by half the
// difference at once and a slower one raises it by Decay (0.25) of the
// difference (by at most 75%), and only when the median of the last three
// runs is slower too. Interference from other work only ever slows a
// run down, so isolated outliers leave the estimate alone while a lasting
// change takes over in a few runs. The latency and per-item time are a
// least-squares line through the class estimates, weighted for relative
// error; a size class without samples is predicted from the line, one
// with samples from its own estimate corrected along the line's slope.
//
// Exploration: each candidate device runs a kernel's tasks Explore (3)
// times per size class before the model decides; a device already
// predicted 4x slower (from two other classes, when it is first tried in
// the class) is tried once. Re-probing:
// every ReprobeEvery-th (100th) decision of a size class goes to the
// runner-up if its predicted finish is within 2x of the best (or, when the
// class co-executes, to the best single device), so that a device that got
// faster is noticed; a probe's run moves its device's estimate at once,
// with weight 1/2, without waiting for the median of three. Clear
// calls (the runner-up predicted 4x later or more) are tracked only one
// time in TrackEvery (8): the others cost a lock, a few multiplications
// and no clock read, about 0.1 us. Place allocates nothing once a kernel
// has been seen. Save and Load keep the model as JSON so that a program
// starts warm.
//
// Co-execution: a streaming task of at least CoExecMin items may be split,
// the first part on the GPU and the rest on the CPU workers, at the point
// where both parts are predicted to finish together (the GPU's share is in
// proportion to its predicted rate, queued work included). It is chosen
// when that finish, times the kernel's measured co-execution efficiency
// (measured over predicted finish of past splits, starting at 1), beats
// the best single device by CoExecGain (10%). On a software GPU such as
// lavapipe the two parts compete for the same cores: set SharedCores,
// which also compares queued work as one pool; without it the Placer
// learns an efficiency above 1 and stops splitting.
//
// Measured here (2 vCPUs shared with other jobs, load average 4-6,
// lavapipe, validation off; go test -bench . ./affinity/): Place costs
// 0.1-0.2 us and allocates nothing; a kernel with nothing tracked costs
// the observer 2 ns per invocation. Run interleaved with the fixed
// policies, Auto's median time is within 2% of the better device for the
// chain kernel at 64, 4096 and 65536 items (CPU, GPU, GPU; the devices
// differ 3-4x) and for saxpy at 64K and 1M items (CPU, 8-17x), and 4-8%
// behind for 2 us saxpy tasks, where placement itself is the difference.
// A mixed frame (small and large chain and saxpy tasks under one join)
// took 29 ms on CPU workers, 14 ms on the GPU and 4.7 ms with Auto, which
// uses both. In the placement test Auto picks the device that direct
// measurement shows faster in all 96 decisions of a typical run (at least
// 95% required). The SPU executor runs saxpy 2.4x slower than the CPU
// workers (its copies cannot hide behind a memory-bound kernel: 0.75 ms
// of 1.35 ms stalled) and compute-bound skinning at about their speed
// with one unit. Co-execution on lavapipe was slower than the better
// device alone in every case (1M skinning: 1.5-2x the CPU workers'
// median; 256K-item chain: 1.2-1.7x the GPU's), and Auto learned an
// efficiency above 1 and stopped splitting; the design targets a GPU that
// does not share the CPU's cores.
//
// # The SPU executor
//
// SPU is a sched.Executor (attach as sched.ExecSPU) that runs streaming,
// reduce and expand tasks the way a Cell SPU did. Each unit owns a local
// store (256 KiB by default) and a DMA goroutine. The task's Whole streams
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
// with an SPUBinding in sched.Kernel.SPU: UseBase writes each chunk's
// first absolute item into Params[BaseParam]. ItemIn marks Whole-rate
// inputs that are really indexed by item (kernels.SkinLBS's vertices when
// Params[0] = 0, one vertex per item), to be streamed in chunks. Kernels
// get a nil *sched.Ctx (an SPU cannot add tasks or wait), and streams must
// have host bytes (ErrSPUStream otherwise). Stats reports the bytes moved,
// the chunks, the time in kernels and in copies, and the time the kernel
// waited for a copy (what double buffering did not hide). Close lets the
// units finish every queued job and returns when all goroutines exited.
package affinity
