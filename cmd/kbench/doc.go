// Command kbench measures the kernels of package kernels on every device of
// this machine, over sizes from a thousand to ten million elements, and
// shows each result as a fraction of the machine's memory-bandwidth bound
// and, for the CPU columns, of the kernel's own bound (copy or compute).
//
// Usage:
//
//	kbench [-kernels LIST] [-sizes LIST] [-reps N] [-min-sample D]
//	       [-quick] [-cpu-only] [-json | -csv] [-plot FILE.svg|FILE.png]
//	       [-validate] [-device NAME] [-spu-store BYTES] [-spu-chunk ITEMS] [-best] [-version]
//	kbench -auto [-auto-tasks N] [-auto-rounds N] [-explore-budget F] [-kernels LIST] [-sizes LIST] [-reps N] [-min-sample D] [-json]
//	kbench -adapt [-adapt-load cpu|gpu|spin] [-adapt-tasks N] [-reprobe N] -kernels K -sizes S
//	       [-plot FILE] [-trace FILE.json] [-timeline FILE.svg]
//
//	go run ./cmd/kbench -quick                       # every kernel, 1e3..1e5, in seconds
//	go run ./cmd/kbench                              # every kernel, 1e3..1e7 (minutes)
//	go run ./cmd/kbench -kernels skin_lbs,saxpy -sizes 1e3,1e5,1e6 -plot /tmp/kbench.svg
//	go run ./cmd/kbench -quick -json > kbench.json   # for machines; -csv likewise
//
// Flags:
//
//	-kernels    comma-separated kernel names (skin_lbs, reduce_sum, ...) or IDs, or all (default)
//	-sizes      comma-separated sizes in elements, 1 to 1e8 (default 1e3,1e4,1e5,1e6,1e7)
//	-reps       samples per measurement, the median is reported (default 5)
//	-min-sample runs are repeated so that each sample lasts at least this long (default 20ms)
//	-best       report the fastest sample instead of the median (the copy bound is always the
//	            fastest): on a machine shared with other work, the run least disturbed by it
//	-quick      sizes 1e3,1e4,1e5, 3 samples of 5ms, unless given: well under 30 s on lavapipe
//	-cpu-only   measure the CPU columns only; do not open a Vulkan device (not with -device or -validate)
//	-json       write the whole report (every sample) as JSON instead of the table
//	-csv        write one row per kernel, size and device as CSV instead of the table
//	-plot       also draw throughput against size, log axes, one panel per kernel
//	-validate   enable the Vulkan validation layer; any message fails the run
//	-device     Vulkan device index or name substring (default: automatic, or $VKJOBS_DEVICE)
//	-spu-store  local store of the SPU-style executor in bytes, 4096 to 1 GiB (default 262144, a Cell SPU's)
//	-spu-chunk  work items per task given to the SPU-style executor (default 0: the other columns' tasks)
//	-version    print the version and exit
//	-auto       measure Auto placement against the oracle and print the regret table (below)
//	-auto-tasks with -auto: Auto's sequence per kernel and size is at least this many runs (default 200)
//	-auto-rounds with -auto: rounds of the sweep, each with a fresh Placer; rows give the median regret and spread (default 3)
//	-explore-budget with -auto or -adapt: the Placer's ExploreBudget (0: its default, 2%; negative: no budget)
//	-adapt      Auto's decisions over time while a load comes and goes (below)
//	-adapt-load with -adapt: cpu (default), gpu or spin
//	-adapt-tasks with -adapt: the number of tasks (default 600)
//	-reprobe    with -adapt: the Placer's ReprobeEvery (default: the Placer's, 100)
//	-trace      with -adapt: a Chrome trace of the run, each Auto task with its decision
//	-timeline   with -adapt: an SVG timeline of ten tasks from the load's start, decisions shown
//
// # What is measured
//
// An element is the unit of each kernel's work, and of -sizes: a vertex for
// the skinning kernels, a bone for local-to-model (90 per skeleton), an
// input value for the 256:1 and 32:1 reductions and the scan's block
// totals, an output sample for ExpandLerp (8 per segment), an output value
// for the scan's downsweep, a 4-byte word for CRC32CBlocks (1024 per 4 KiB
// block) and an element for saxpy. Sizes are rounded up to whole work items.
// The data is generated: skinning reads concatenated 4096-vertex character
// meshes cycling over 11 characters of 90 bones, whose palettes fill one
// 64 KiB uniform block, so the storage- and uniform-palette variants read
// the same bytes.
//
// Each kernel and size runs on five devices (columns):
//
//	cpu-1         the kernel's CPU function on one goroutine, called directly
//	cpu-all       the scheduler (sched): every worker plus the main thread helping in Wait
//	spu           the SPU-style executor (spu.Executor, one unit): each task's streams are
//	              copied chunk by chunk into a local store of -spu-store bytes by a DMA
//	              goroutine, double-buffered, and the kernel runs on the local copy; "w"
//	              is the share of its time the kernel waited for those copies
//	              (spu.Stats.Stall). ScanDownsweepU32 does not run there (its
//	              Whole input is indexed by the absolute work item); a kernel whose
//	              streams do not fit the store is listed as not run
//	gpu-dispatch  the Vulkan executor with GPU-resident buffers (gpu.Buffer); the time
//	              is the sum of the tasks' dispatch times from the GPU timestamps
//	gpu+xfer      the executor with host memory: upload, dispatch, read-back, wall clock
//
// Streams larger than 64 MiB are cut into several tasks (chunks) so that
// each fits a Vulkan storage binding (128 MiB guaranteed); every device runs
// the same chunks. Each device first runs once, and its output is checked
// against the one-goroutine run with the tolerances of package kernels
// (bit-exact, or 2e-5 relative for skinning, 1e-4 for local-to-model,
// (factor+16) * 2^-24 * sum |x| of the block for the float sums, whose CPU
// assembly adds 32 partial sums where the shaders add in index order);
// a mismatch fails the run. That run also warms up caches, page tables and
// lavapipe's shader compilation at a kernel's first dispatch. Then runs are
// repeated so that a sample lasts at least -min-sample, and -reps rounds
// take one sample of every device and of the copy bound in turn, so that
// load from other processes hits all columns alike; the median sample is
// reported.
//
// Beside each result is, first, the memory-copy bound: the time copy() takes to
// read and write as many bytes as the kernel reads and writes (every input
// and output stream once), on one goroutine or on GOMAXPROCS goroutines,
// whichever is faster, measured at that size in the same rounds as the
// kernel (so small sizes are bounded by the caches, large ones by memory;
// above 256 MB it is extrapolated linearly from a 256 MB copy). The
// fraction in brackets is the copy's fastest sample over the kernel's
// fastest sample of the same rounds, each the run least disturbed by
// other processes: 100% would be a kernel as fast as a plain copy of its
// bytes. A fraction above 100% is printed as "over!", no figure, with a
// note after the table: the bound is not one for that kernel (it moves
// fewer bytes than its streams declare, or mostly reads, which a copy of
// as many bytes cannot); -json and -csv keep the ratio.
//
// Then, for the CPU columns, the fraction of the column's own bound
// (bound.go), taken in the same way, and the range of the rounds' own
// ratios (each round's bound sample over its kernel sample): narrow on a
// quiet machine, wide where other work disturbed the run, whose fractions
// are then not to be quoted. The bound is the slower of the copy bound on
// the cores the column uses (one goroutine's copy for cpu-1 and spu, the
// faster of one and all for cpu-all) and the compute bound, the kernel's
// float, integer and CRC operations per element (listed after the table)
// at this core's peak:
// 16 float32 lane operations (two 256-bit AVX2 instructions), 24 integer
// lane additions or one 8-byte CRC32 instruction per cycle, at the clock
// measured with a chain of dependent adds. The bound-1 and bound-all
// columns give the two bounds in elements per second (c compute, m copy),
// and all/1 gives cpu-all's speed-up over cpu-1 beside the one the bounds
// allow: where that is below 1.8x, memory bandwidth (or the cost of
// starting goroutines, at small sizes) does not allow 1.8x.
//
// After the table, one line per kernel gives the crossover: the smallest
// size at which the GPU (dispatch only, and with transfers) was faster than
// all CPU workers (cpu-all), with cpu-all's time over the GPU's there (near
// 1.00x is a tie within the noise of a shared machine), or "none up to" the
// largest size.
//
// # Auto placement against an oracle (-auto)
//
// -auto asks, per kernel and size, how much a user loses by writing
// Affinity: sched.Auto instead of the best fixed choice. The oracle is
// the fastest of cpu-1, cpu-all, gpu+xfer and the best static CPU/GPU
// split, found by sweeping the GPU's share of the items over 1/8 .. 7/8
// (each share run as two tasks at once, as the scheduler runs a Placer's
// split; not for Simple kernels, which do not split). Auto is a sequence
// of at least -auto-tasks runs with sched.Auto through an placement.Placer
// that starts knowing nothing (Options defaults, SharedCores when the
// Vulkan device computes on the host's cores, OneCore: one core is a
// choice, as in the oracle) and is shared by the
// whole sweep, as one program's would be. Every run of Auto counts: the
// first (checked against cpu-1 like every column), the exploration, the
// re-probes. The columns are first timed in interleaved rounds (a sample
// of every column in turn, each after a garbage collection; each
// column's time is the mean of its samples). Their means only pick the
// oracle's candidates: cpu-1 and cpu-all always, gpu+xfer and the splits
// when within 15% of the fastest. Auto's sequence then runs paired with
// the candidates, run by run: each step runs Auto once and every
// candidate once, starting from a different one each step so that each
// takes every place equally often, and the oracle is the candidate with
// the least time over those paired runs. So the load of other processes
// at each moment, and what one run leaves behind for the next (caches,
// the software GPU's threads winding down), fall on Auto and on the
// oracle alike: a column's mean from other moments (the earlier harness)
// left the load's changes in each row's regret. The sweep is repeated
// -auto-rounds times, each round with a fresh Placer (the columns are
// measured in the first only); each row shown is its median round's, with
// every round's least and greatest regret, and the total is given for
// the rows shown and as the median and spread of the rounds' totals.
//
// Per row: each column's time per run, the oracle, Auto's mean time per
// run and where its tasks went, the tasks it placed to explore, its
// regret (Auto's total over the oracle's time for as many runs, minus
// one) and the share of its tasks placed on a column more than 10% slower
// than the oracle (a co-executed task is judged by the nearest swept
// split). Then per kernel and in total, over the rows whose oracle run
// takes at least 50 us (shorter tasks are not worth placing) and over all
// rows: total Auto time over total oracle time, so long rows weigh more.
// Auto chooses one core as the oracle's cpu-1 does (the Placer's OneCore:
// the task runs unsplit on one worker; its tasks are judged by cpu-1).
//
// # Adaptation (-adapt)
//
// -adapt runs the first kernel of -kernels at the first size of -sizes as
// -adapt-tasks Auto tasks, one after another, with a load beside them from
// the first third to the second: cpu starts a child process of busy
// loops, one thread per CPU; gpu keeps two GPU tasks of the same kernel at
// 4x the size queued from another registered thread; spin runs busy
// goroutines in kbench, which take the Go runtime's processors from the
// CPU workers but not the CPU from a software GPU's own threads. It prints
// each phase's tasks, those on the GPU, the median task time and how many
// tasks passed before the phase's majority device ran five in a row; -plot
// draws each task's time, marked by the device chosen, with the Placer's
// predictions for the CPU and the GPU and the load's start and end. The
// Placer tracks every decision (TrackEvery 1). -trace and -timeline write
// the run's Chrome trace and an SVG timeline with each Auto task's
// decision: device, reason, predicted time per device, measured time.
//
// # Output and exit status
//
// The table (or -json, -csv) goes to standard output; the table's header
// (machine, clock, what the columns mean) is printed before measuring.
// Messages go to standard error, with progress: a bar when standard error
// is a terminal, else one line per measured kernel; -plot prints the
// absolute path it wrote; it, -trace and -timeline are checked for writing
// before measuring, and each is written beside its path and renamed into
// place, so that a failed write leaves the file that was there as it was. A
// flag of -auto or -adapt given without its mode is a usage error, as it
// would change nothing. With no Vulkan device kbench says so on standard
// error, measures the CPU columns and exits 0. Exit status: 0 success; 1 a
// failure (a task error, a result outside its tolerance, a validation
// message, an unwritable file); 2 bad flags or arguments (the usage is
// printed).
package main
