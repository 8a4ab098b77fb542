// Package placement decides where a task runs: Affinity parses and prints
// a task's affinity (for command lines and configuration), and Placer is a
// learned CPU/GPU/SPU placement policy for Auto tasks: the scheduler's
// Placer and Observer. It depends on package sched, on package pinning
// (how many CPUs the workers have) and on package spu (the SPU executor as
// a candidate); it never links Vulkan (its tests and benchmarks use
// package gpu on lavapipe).
//
// # Task affinities
//
// Affinity is a sched.Affinity that parses and prints "cpu", "gpu", "spu",
// "auto" and "thread:N", and is a flag.Value.
//
// # Learned placement
//
// A Placer is the scheduler's Placer and Observer. When an Auto task
// becomes runnable, Place predicts, for each device that can run it (CPU
// workers; the GPU if the kernel has a GPU binding and an executor is
// attached; the SPU executor if given in Options.SPU and the task
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
// the class) is tried once, and one predicted 8x slower is not tried (nor
// tried further once its own samples in the class say so): exploring it
// would cost more than it could ever save. Re-probing:
// every ReprobeEvery-th (100th) decision of a size class goes to the
// runner-up if its predicted finish is within 2x of the best (or, when the
// class co-executes, to the best single device), so that a device that got
// faster is noticed; a runner-up predicted r times slower, r > 2, every
// ReprobeEvery*(r-1)-th, which bounds the probes' cost at about 1% however
// slow it is and still notices when a load that slowed it far is gone; a probe's run moves its device's estimate at once,
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
// lavapipe, validation off; go test -bench . ./affinity/placement/): Place costs
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
package placement
