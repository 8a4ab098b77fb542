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
// fits its local store; with Options.OneCore, one core: the task unsplit
// on one CPU worker), the task's finish: the predicted
// work already queued there (tracked placements not yet completed) plus
// the predicted service time, and returns the earliest.
//
// The model is per (kernel, device): service time = latency + per-item
// time x effective items, transfers included, where effective items are
// the items one CPU thread gets (n / min(threads, pieces of a grain)) on
// the CPU workers and n elsewhere (one core included). It is learned from completed Auto tasks only:
// the Placer tracks each placement and the scheduler's RunEvents for it
// (CPU pieces, matched by kernel, item range and parent task; executor
// jobs by kernel and range; an invocation that started before the
// placement is never matched), and when the last piece completed it
// learns the service time: from the placement (or, if the device was busy
// with earlier tracked work, from when the task's work began) to the end
// of the last piece. For the GPU executor that is the end of the dispatch
// (its timestamp on the host clock), which leaves out the read-back and
// the fence's signal but, unlike the time of the
// executor's report, not the load of the machine. The first run of a
// kernel on each device (shader compilation, memory growth) is not learned
// from.
//
// One core is a way to use the CPU workers rather than a device: Place
// raises the task's Grain to its size, so the scheduler runs it as one
// piece on one worker (or on the thread waiting for it), and the model
// learns it as device "cpu1" (its events are the CPU workers'; its queued
// work is theirs). Fanning a task out costs the pieces' hand-offs and,
// on a machine loaded by other processes, the wait for the slowest piece;
// small tasks, or a busy machine, can run faster on one core, and the
// model measures which. It is an option because it costs each kernel a
// few exploration tasks per size class, and a scheduler whose threads
// have the machine to themselves rarely gains from it.
//
// Each size class (item counts from 2^(c-1) to 2^c - 1) keeps a robust
// estimate: the median of its first three samples, then an exponentially
// decaying average in which a faster run lowers the estimate by half the
// difference at once and a slower one raises it by Decay (0.25) of the
// difference (by at most 75%), and only when the median of the last three
// runs is slower too. Interference from other work only ever slows a
// run down, so isolated outliers leave the estimate alone while a lasting
// change takes over in a few runs. That estimate follows the faster runs,
// but a task costs the mean: each class also keeps its inflation, the
// decaying mean of each run's ratio to the estimate it found (clipped to
// [1/2, 3]), and predicts the estimate times the inflation. Workers that
// fan a task out on a loaded machine, and wait for their slowest piece,
// are often slowed far beyond their undisturbed time, one core rarely:
// the estimate alone would prefer the workers where one core costs less
// on average. The latency and per-item time are a
// least-squares line through the class estimates, weighted for relative
// error; a size class without samples is predicted from the line, one
// with samples from its own estimate corrected along the line's slope.
//
// Exploration: each candidate device runs a kernel's tasks Explore (3)
// times per size class before the model decides; a device already
// predicted 4x slower (from two other classes, when it is first tried in
// the class) is tried once, and one predicted 8x slower is not tried (nor
// tried further once its own samples in the class say so): exploring it
// would cost more than it could ever save.
//
// Exploration budget: what learning may cost is bounded by a fraction
// of the kernel's run time (Options.ExploreBudget, default 2%). The
// Placer keeps, per kernel, its run time R (the best device's predicted
// service time, summed over the kernel's placements), what explorations
// cost S (each exploration's measured time beyond the best device's
// prediction for the same task, when it completes) and what those in
// flight are predicted to cost. A device other than the predicted best
// is explored (a task of its quota, a slice probe, a re-probe, a
// co-execution probe) only if S, the predictions in flight and this
// exploration's predicted cost stay within the budget times R. The rule
// is checked at every decision, so S <= budget x R holds up to the error
// of the predictions: the invariant is that exploring never costs more
// than the budget of the run time plus what was unpredictable. A device
// k times slower than the best costs k-1 tasks of the best per
// exploration, so the budget spaces its explorations (re-probes
// included) at least (k-1)/budget tasks apart, and the longer it is
// slower the rarer they get, however large k is.
// What is unpredictable is a device's cost before its line is
// identified: before it has samples in the class or in two classes (its
// first run, which is not learned from, and its first samples), the
// predicted cost is a lower bound: a task takes at least the estimate of
// the largest sampled class below it, the longest slice of it measured,
// and the shortest time the device took for any kernel (its fixed
// latency, a GPU's dispatch, transfers and fence, is every kernel's: so
// only the first kernel to try a device has nothing to price it by).
// Those explorations are let through at their lower bound,
// and what they cost beyond it is counted apart (Snapshot's
// SurpriseCost), not in S: it is paid once, by a few runs per device,
// and cheaper explorations that the model can price are not held up by
// it. So exploration's regret is at most the budget plus those few runs
// over the sequence's time, which tends to the budget. Scaling a small
// first sample up by items (an upper bound, rejected) would make a device
// whose small tasks are all latency look hopeless at every size and
// never be explored where it wins. Counting a fixed number of
// explorations per device (the quotas alone, rejected as the only
// bound) lets a device hundreds of times slower cost more than all the
// gain.
//
// Slice probes: a whole exploration task on a device far slower than the
// best costs as many tasks of the best as it is slower (a software GPU
// can be hundreds of times slower), so an executor device (GPU, SPU) is
// first explored with a slice of a streaming task: 1/64 of its items run
// there and the rest on the CPU workers, as co-execution runs a split.
// The slice's time bounds the whole task's there from both sides (time
// grows with items, and the latency does not): when the slice alone
// takes longer than the best device's predicted whole task (twice that
// with SharedCores, where the slice competes with the rest of its task
// for the same cores), the device cannot win the class and is not
// explored there; when the slice's time scaled up to the whole task's
// items (an upper bound: the latency is paid once, not per slice) beats
// the best, whole tasks are explored there; otherwise the next probe
// takes a slice 4x larger (1/16, 1/4, then whole tasks), and the slices'
// sizes give the device's line its latency and per-item time, which
// rules the device out too when it predicts the whole task skipFactor
// (8) times slower than the best. So exploring a hopeless device costs about one slice,
// a fraction of the best device's task plus the device's latency,
// instead of several of its whole tasks. While a class is probed by
// slices the model does not choose the device for a whole task from its
// line (fitted at other sizes, where latency may have hidden the time per
// item), and the longest slice measured is a floor under the device's
// predictions for the class. One slice per device and class
// is in flight at a time; the device's first run is a slice too. The
// rest of a sliced task is not learned from (it shares the cores with
// the probe), and a class that slices ruled out counts as explored (its
// tries reach Explore, which Save keeps). Tasks that cannot be split
// (Simple kernels, fewer than 8 items) and Placers with NoCoExec or
// NoSliceProbe explore whole tasks.
//
// Re-probing: every device other than the best is re-measured on its own
// schedule, so that one that got faster is noticed: after ReprobeEvery
// (100) decisions of the size class without a probe of it when its
// predicted finish is within 2x of the best (or, when the class
// co-executes, the best single device), after ReprobeEvery*(r-1) when it
// is predicted r > 2 times slower, which bounds each device's probes at
// about 1% of the time however slow it is and still notices when a load
// that slowed it far is gone. With an exploration budget, probes come
// sooner when the budget affords them: a device predicted r times slower
// after (r-1)/ExploreBudget decisions (at least 10), the pace at which
// its probes cost the budget, so that a device close to the best (one
// core beside the workers, within the noise of each other on a loaded
// machine) is re-measured every few tens of tasks and a choice made on a
// few unlucky samples does not last; and a probe the budget cannot pay
// for waits. A schedule per device, not one for the
// runner-up, keeps a device that is close to the best (one core beside
// the workers) from hiding a third one that became fast. A probe's run
// moves its device's estimate at once, with weight 1/2, without waiting
// for the median of three. Clear
// calls (the runner-up predicted 4x later or more) are tracked only one
// time in TrackEvery (8): the others cost a lock, a few multiplications
// and no clock read. Place allocates nothing once a kernel
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
// How close Auto comes to the best fixed choice is measured by kbench
// -auto (regret against an oracle) and -adapt (a load that comes and
// goes); docs/auto-placement.md describes both and BENCHMARKS.md holds
// the figures. On a software GPU that computes on the CPU's cores
// (lavapipe), co-execution slows both parts down, and a Placer without
// SharedCores learns an efficiency above 1 and stops splitting; the
// co-execution design targets a GPU that does not share the CPU's cores.
package placement
