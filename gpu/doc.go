// Package gpu is the project's Vulkan compute backend: device selection,
// memory, compute pipelines, and the Executor that runs tasks with GPU
// affinity as compute dispatches. No type of the Vulkan binding appears in
// its API, and every failed call becomes an error that names the call and
// its VkResult (*VkError). It owns the process's Vulkan loader
// (libvulkan.so.1, dlopened once by gpu/internal/vkshim; its
// vkGetInstanceProcAddr is the one function loader, through which every
// Vulkan function of the process is reached).
//
// Graphics lives in package gpu/gfx (render pass, graphics pipelines,
// offscreen and swapchain targets, secondary command buffers recorded in
// parallel as render.Recorder), which draws on a *Device and reads
// *Buffer as vertex data; windows come from package gpu/present (GLFW).
// This package imports neither, nor render, so a compute user links no
// renderer and no window system (TestComputeLinksNoRenderer). What gfx
// needs of a Device beyond this API (Vulkan handles, the queue lock,
// staging memory, buffer references) goes through the internal package
// gpu/internal/devhook, filled by this package's init (devhook.go).
//
// # Using it
//
//	dev, err := gpu.Open(gpu.Options{})       // or Options{Device: "1"}, VKJOBS_DEVICE=...
//	if errors.Is(err, gpu.ErrNoDevice) { ... run CPU-only ... }
//	fmt.Println(dev.Selection())               // which device, and why
//	exec, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{})
//	s.AttachExecutor(sched.ExecGPU, exec)      // s.Close closes exec
//	buf, err := dev.NewBuffer(bytes)            // GPU-resident
//	task.Data.Out[0] = buf.Stream(stride, count, 0)
//
// A kernel runs on the GPU when its registration carries a *Binding in
// sched.Kernel.GPU (SPIR-V following the shader contract documented on
// Binding) and a task of it has Affinity sched.GPU (or Auto, placed there by
// a Placer). Its completion releases dependents and the parent exactly as a
// CPU task's does: the executor calls sched.Job.Done.
//
// # A kernel's shader is checked against its declaration
//
// sched.Registry.Register calls bind.Binding.Check, which reads the SPIR-V
// (bind.ParseSPIRV, the project's one reader) and compares it with the
// kernel's In and Out streams: one buffer per stream at the contract's
// binding (input i at i, output j at 4+j) among those the shader uses
// (unused declarations are ignored, and an input the shader never reads
// needs no binding), storage or uniform as UniformIn says, outputs not
// readonly and stored to, inputs not stored to (they are never copied
// back), an element size that divides or is divided by the stream's
// stride where the shader's array states one (an array alone in its
// block, not padded apart further than the stream), a push-constant block
// of 40 bytes whose begin and end the shader reads, and a workgroup size
// whose X is specialization constant 0 or fixed at Binding.LocalSize and
// whose Y and Z are 1 (docs/gpu-kernels.md). A mismatch is refused
// with an error naming the binding and the stream, so a shader that would
// read or write the wrong buffer (and leave an output at zero) never runs.
// The executor checks again when it creates a pipeline. Rejected: checking
// only in the executor (the error would come at the first task, after a
// frame had been built on the kernel), and trusting the validation layer
// (it is off in production, and it reports such a pipeline but then
// crashes in vkCmdDispatch).
//
// # The binding
//
// Every Vulkan call goes through package gpu/internal/vkshim, the one
// package of the project that uses cgo (TestOneCgoPackage) and the one
// binding (TestNoVulkanGo: no package imports the generated vulkan-go
// binding, which the project used for object creation before). It holds
// small C functions that build each create-info struct and each array
// Vulkan reads on the C stack and call the functions loaded once: the
// instance's through vkGetInstanceProcAddr, the device's into a table
// through vkGetDeviceProcAddr (compute: shim.c and obj.c; graphics, for
// package gpu/gfx: gfx_shim.c). Go passes handles as integers and
// pointers to Go arrays that hold no Go pointers, so no struct a Vulkan
// call reads lives in C heap memory and nothing must be freed after a
// call. vkshim's package doc says
// why a generated binding was rejected (C memory per call, freed by
// finalizers that may run while Vulkan reads it; no C function pointer
// for the debug callback; a loader name that needs the -dev package).
// vkshim dlopens the runtime loader libvulkan.so.1 itself, so a machine
// without the -dev package still runs, and a machine without any loader
// gets ErrNoDevice with the Debian packages to install instead of a crash.
// The hot path (record, submit, complete) allocates neither C nor Go memory
// in steady state: TestRoundTripAllocs checks a whole round trip.
//
// Validation messages become errors, never crashes: the debug callback
// counts the error messages reported on the calling OS thread; pipeline
// creation runs on one locked thread and fails with ErrValidation (and
// ErrBadBinding) when the layer objected, and a command buffer whose
// recording drew an error message is not submitted (its tasks fail with
// ErrValidation). Messages are also kept (Device.Messages).
//
// # Device selection
//
// Open enumerates the physical devices and picks, among those with a
// compute queue, a discrete GPU, else an integrated one, else a virtual
// one, else a CPU implementation (lavapipe); Options.Device or the
// VKJOBS_DEVICE variable (an index or a name substring) overrides that,
// and an override that matches nothing is an error wrapping
// ErrDeviceOverride, not ErrNoDevice, so that programs that go on without
// a GPU when there is none stop when the named device is not there.
// SelectDevice is that policy as a pure function (tested with stubbed
// device lists). Device.Selection reports the choice and the reason; the
// package never logs.
//
// # Memory
//
// When the device has memory that is device-local, host-visible and
// coherent on a heap that holds (nearly) all of its device-local memory
// (unified memory: integrated GPUs, lavapipe; or resizable BAR), streams
// live there and the host writes and reads them through the mapping
// ("direct"). Else each buffer the GPU binds is device-local and has a
// host-visible staging twin; copy commands move the bytes. A discrete GPU
// without resizable BAR also offers a device-local, host-visible type, but
// only on a BAR window of about 256 MiB, too small to hold every buffer
// and slow for the host to read, so it stages (directMemory). The heap
// directMemory measures is the heap direct buffers are then allocated
// from: a device may list mapped types on both its BAR window and its VRAM
// heap, in either order, and chooseMemType takes the one on the largest
// heap, not the first listed. Options.ForceStaging selects the second path
// on any device, so that it is tested on lavapipe too.
//
// Host streams (Stream.Bytes) are transient: each command buffer in flight
// owns an Arena, a linear allocator reset when its fence signals and grown
// (while idle) to fit the largest batch seen. Only the bytes of the job's
// item range are copied in and out, which is what lets the scheduler split
// a streaming task between CPU workers and the GPU: the two halves write
// disjoint parts of the same output. Arena.window places a sub-range so
// that the descriptor still starts at element 0 of the stream while only
// the used bytes take space.
//
// Every allocation is counted against its memory heap, and one that would
// take the heap past its size fails with ErrOutOfMemory and the figures
// before the driver is asked: some drivers (lavapipe) let a program
// allocate past the heap they report, so a workload too large for the
// device would otherwise run into swapping or time-outs instead of an
// error at its setup. Device.Limits reports the heap, its use and the
// binding limits, for checks before the work (cmd/crowd's -count).
// Rejected: VK_EXT_memory_budget, which lavapipe lacks and which reports
// other processes' use, which changes under the program.
//
// Buffer is a persistent GPU-resident buffer with an ID that a Stream names
// (Stream.Buffer); it is bound in place, so chained kernels keep their data
// on the device. A stream with both Buffer and Bytes is a host mirror:
// inputs are copied from Bytes into the buffer before the dispatch, outputs
// copied back to Bytes after it; Bytes that are the buffer's own mapping
// are used in place. Batches hold references to the buffers they use, so
// Buffer.Close during a dispatch defers the destruction to its completion.
//
// # Submission and batching
//
// Enqueue appends the job to a list under a mutex and wakes the submitter
// goroutine; it never blocks on the GPU. When the executor is idle (no job
// waiting, the submitter idle, a command buffer free, the queue lock free)
// and the job is small (at most 64 KiB of host streams, its pipeline
// compiled), Enqueue records and submits it itself, on the caller's
// thread, which saves the hand-off to the submitter goroutine on a lone
// task's round trip. The submitter takes a free
// command buffer ("slot": command pool, fence, descriptor pool, query pool,
// arena), then takes every job that arrived, up to MaxBatch, and records
// them into one command buffer: upload copies, one barrier, each job's
// dispatch (pipeline, descriptor set, push constants, timestamps), a
// barrier only where a job's GPU-resident bytes overlap an earlier job's
// writes, read-back copies, and a barrier to the host. Tasks in one batch
// are independent by construction, since the scheduler releases a
// dependent only after its dependency completed, i.e. after its fence; a
// barrier at the start of each command buffer orders it after earlier
// command buffers' writes. With InFlight command buffers (default 2)
// submitted and none free, jobs accumulate meanwhile and leave together:
// batching comes from back-pressure, without a timer that would delay a
// lone task. Bursts batch without a timer too: the executor is a
// sched.Burster, so when one finished task releases many GPU dependents
// (a gate, a fan-out), the scheduler brackets their Enqueues with
// BeginBurst and EndBurst; the executor neither submits inline nor wakes
// an idle submitter in between, so a burst that finds the submitter idle
// leaves in ceil(n/MaxBatch) command buffers however slowly the releasing
// thread runs (before, a submitter racing a release slowed by load or the
// race detector took it a few jobs at a time). A submitter already busy
// may take part of a burst early. A fan-out of CPU tasks holds nothing,
// and a burst of one GPU job goes out inline at EndBurst, as a lone
// Enqueue would (ExecStats.Inline counts inline submissions). Pipelines are created once per kernel and cached (with a
// VkPipelineCache, optionally saved to a file); PreparePipelines creates
// them ahead of time, because a first compilation takes tens of
// milliseconds.
//
// # Frame graphs: recorded segments
//
// The Executor is a sched.SegmentExecutor: a sched.Graph hands it, once
// when it seals, each group of GPU nodes that are readied together (a
// segment), and then one job per segment per run. A segment has its own
// command buffer, fence, descriptor sets and staging memory (an arena,
// mapped once), recorded at its first run without ONE_TIME_SUBMIT and
// then submitted again as it is: a run copies the host inputs into
// staging, resets the fence, submits (one vkQueueSubmit), and after the
// fence copies the host outputs back; it records nothing and allocates
// nothing (ExecStats.Records and Replays count it). Host bytes are read at
// each run from the graph's own data, so re-pointing a host stream to
// other memory of the same size changes nothing recorded. A node's Params
// are push constants, part of the recording: a run whose Params differ
// from the recorded ones records again (keeping descriptor sets and
// staging); a SetData that changes a binding (buffer, offset, size,
// element count, host mirror), a bound buffer's Close, or a failed run
// plans it again. A node that cannot be bound or compiled fails alone:
// the other nodes of its segment run, and their successors too.
// Rejected: parameters in a buffer written at each run
// (it would change every kernel's shader contract). One run of a segment
// is in flight at a time; a goroutine started with the executor's first
// segment completes them in order. segment.go has the details; the graph's
// side is in sched/graph.go (step 6).
//
// # Completion
//
// One completion goroutine per executor waits for the submitted command
// buffers in order with a blocking vkWaitForFences (no polling), copies
// outputs back, calls Job.Done for each job, and then reads the timestamps
// and reports each task to the scheduler's Observer (RunEvent with Thread
// -1, Where sched.GPU, Start and Stop converted to sched.Nanotime) and to
// the statistics (Executor.Stats, Executor.KernelStats: dispatch, upload
// and read-back time, submits, tasks, latency), which a placement policy
// can learn from. A panic in the Observer is kept as an error message of
// the device (Device.Messages); the task's outcome stands. Timestamps are
// read after Done because vkGetQueryPoolResults costs several
// microseconds on lavapipe. The GPU
// clock is related to the host's by a calibration at the first executor's
// creation and re-anchored per batch between submission and completion.
//
// # Failures
//
// Errors of shader modules and pipelines (cached, so later tasks of the
// kernel fail fast), of streams (unknown buffer, out of range, misaligned,
// beyond maxStorageBufferRange), of allocations (ErrOutOfMemory) and of
// submission fail the affected tasks with a *sched.TaskError that wraps the
// cause; waiters and dependents see it, and the scheduler and CPU workers
// go on. A fence time-out (ExecutorOptions.FenceTimeout) fails its tasks
// with ErrTimeout; the executor keeps waiting for that command buffer
// before reusing it, and declares the device lost after HungAfter more
// time-outs. VK_ERROR_DEVICE_LOST from any call marks the device lost: from
// then on Enqueue fails each job at once, in-flight jobs fail without
// waiting, and buffers and executors refuse to be created. Device.InjectFault
// simulates a device loss at the next vkQueueSubmit or an allocation
// failure, on the real device, for tests, and FaultStall a command buffer
// that waits for a host event until Device.ReleaseStall: GPU work that
// provably cannot finish, so that time-out tests hold on a loaded machine.
// Malformed SPIR-V is rejected before it reaches the driver (lavapipe may
// crash on it), and so is a module that declares a SPIR-V capability or
// extension the device was not created with (Float64 where the device
// lacks shaderFloat64, 8- and 16-bit storage, which the package does not
// enable): without the validation layer the driver need not report it.
//
// A kernel may refuse a task on a device (bind.Binding.Admit, asked
// before each job is planned and before each run of a graph segment for
// its nodes): the task (the graph node, alone) fails with ErrRefused and
// the kernel's reason, and nothing is dispatched. It is for what a device
// would compute wrong without any error: on lavapipe, a shader that needs
// more loop passes per invocation than llvmpipe's budget
// (Device.LoopBudget, LavapipeLoopBudget: one counter per invocation, or
// SIMD vector of invocations, for all loops together; once it is spent
// every later loop runs at most once). admit.go has the details.
//
// Executor.Close submits what was enqueued, waits for every command buffer,
// finishes or fails every job, and stops both goroutines; Enqueue after
// Close fails the job at once. Device.Close closes the executors still
// open and frees everything, buffers and arenas left open included; every
// call after it (a buffer's Write, an arena's Alloc, NewExecutor, a GPU
// task) fails with ErrClosed, and Close again does nothing. With
// validation enabled, the layer reports
// any leaked object then (the tests fail on it).
//
// # Costs on lavapipe
//
// The figures are in BENCHMARKS.md (section gpu), with the command that
// measures them (BenchmarkGPURoundTrip, BenchmarkGPUBatch,
// BenchmarkStreamOffload). What they decided: lavapipe runs a timestamp
// through its rasterizer machinery once per command buffer, and a
// timestamp at any stage other than TOP_OF_PIPE also makes it flush; so on
// a CPU device both timestamps are TOP_OF_PIPE and timestamps are off
// unless ExecutorOptions.CPUTimestamps (on GPUs they are BOTTOM_OF_PIPE).
// Batching many tiny tasks into one command buffer costs a fraction of
// submitting them one by one. Most of a lone task's round trip is hand-offs
// between threads (lavapipe's queue thread, the completion goroutine, the
// waiting scheduler thread). A scheduler thread that waits for a GPU task
// therefore sleeps at once instead of spinning first (sched.Ctx.Wait): a
// spinning waiter took the core that lavapipe's threads needed on a
// 2-core machine, which made the round trip several times longer.
// Memory-bound kernels run slower on lavapipe than on the Go workers, and
// larger workgroups help it a lot; a cost-based placer learns that.
//
// # On real GPUs
//
// Everything runs on lavapipe here, which is lenient where GPUs are not, so
// the package guards the differences a review of the code found:
// robustBufferAccess is enabled where offered (lavapipe always
// bounds-checks; a GPU without it could read other memory or lose the
// device); memory is mapped directly only on unified memory or resizable
// BAR, never into a discrete GPU's 256 MiB BAR window (directMemory);
// devices lacking a requested extension (VK_KHR_swapchain for a window) are
// skipped; portability drivers (MoltenVK) are enumerated and get
// VK_KHR_portability_subset; binding offsets honour the device's alignments
// (Device.BindingAlignment: up to 256 bytes on desktop GPUs); a swapchain
// out of date twice in a row skips the frame (package gpu/gfx); a pipeline
// cache file from another device or driver is ignored; timestamps survive a
// counter wrap. Known limits, untested for want of hardware: presenting
// (package gpu/gfx) holds the queue lock that compute submissions also take
// (with FIFO, some drivers block in vkQueuePresentKHR, delaying GPU tasks:
// a second queue for compute would fix it); dispatches of one batch may
// overlap on a GPU, so a job's two timestamps measure only its unoverlapped
// part; each buffer is its own allocation (drivers allow 4096); the C shim
// (gpu/internal/vkshim) loads libvulkan with dlopen, so Windows is not
// supported.
package gpu

// The test kernels' SPIR-V (testdata/*.spv) is generated from testdata/*.comp:
//
//go:generate sh testdata/gen.sh
