// Command crowd is the project's showcase: the test scene of the BitSquid
// task manager (Niklas Frykholm, "Task Management -- A Practical Example",
// 2010) of a thousand individually animated characters with 90-bone
// skeletons, each frame a task graph on the scheduler, with animation
// sampling, local-to-model and skinning on the CPU workers, the GPU, the
// learned placement or the SPU-style executor, and rendering done by
// gathering draw packets into per-job render contexts, merging and
// sorting them, and recording Vulkan command buffers in parallel (Frykholm,
// "Parallel rendering", 2009). docs/design.md gives the sources' addresses.
//
// # Usage
//
//	go run ./cmd/crowd                        # window if there is a display, else offscreen + crowd.png
//	go run ./cmd/crowd -headless -frames 300  # offscreen; writes crowd.png (-out FILE.png)
//	go run ./cmd/crowd -offload gpu           # local-to-model and skinning as Vulkan compute
//	go run ./cmd/crowd -offload auto          # placement.Placer decides per task (learned costs)
//	go run ./cmd/crowd -offload spu           # the SPU-style local-store executor (package spu)
//	go run ./cmd/crowd -pipeline 3 -trace t.json -timeline t.svg
//	go run ./cmd/crowd -model cmd/crowd/testdata/cesium_man.gltf -count 200
//	go run ./cmd/crowd -render=false          # the simulation alone (packets still sorted and recorded)
//
// Flags: -count N characters (1000), -bones N per skeleton (90; with
// -model the model's own joints), -frames N (120 headless; 0 runs until
// the window closes), -size WxH, -offload
// cpu|gpu|auto|spu, -out FILE.png, -pipeline N (1-4), -trace FILE.json,
// -timeline FILE.svg, -headless, -model FILE.gltf, -tolerance cm (the
// clips' compression target, 0.1), -codec curve|uniform (the clips' codec,
// curve; see anim.Codec), -clip-rate Hz (30), -seed, -validate (Vulkan
// validation layer; any error message fails the run), -check (a checked
// run: sched.Config.CheckRaces refuses tasks that race on memory, and
// with a Vulkan device -validate's layer is on), -dt (0-1 s),
// -warmup (-1 or more), -workers (0-256), -vsync, -graph (frame graphs,
// true; false issues every frame's tasks anew), -q, -version. go run ./cmd/crowd -h lists them all.
//
// Output files (-out, -trace, -timeline) are checked before any work, and
// the messages give their absolute paths. Esc closes the window. SIGINT
// (Ctrl-C) or SIGTERM stops the run after the frames in flight: the PNG,
// the trace, the timeline and the summary are still written, and the exit
// status is 128 + the signal's number (130 for Ctrl-C); a second signal
// ends the process at once. A headless run reports its progress, in place
// on a terminal and as a line per quarter of the run otherwise.
//
// At exit it prints a summary: frames, median and 95th-percentile frame
// time, each phase's and each pipeline stage's median, the sampling +
// local-to-model and simulation times against their goals, where every
// kernel ran (invocations and work items per device), CPU utilisation
// (getrusage process CPU time / wall time / cores), heap allocations per
// frame (runtime.MemStats over the timed frames) and footsteps per second.
//
// # Content (internal/rig)
//
// The default character is CMU motion capture (Debian assimp-testmodels,
// /usr/share/assimp/models/BVH/01_01.bvh and 01_03.bvh: 31 joints, CMU
// units, imported by package anim) on a skeleton extended to -bones with
// procedural chains: four three-link fingers on each hand, a five-link
// three-strip cape on the upper spine, an eight-link tail on the hips, a
// ponytail and two antennae on the head (59 bones: 31 + 59 = 90; more
// become ribbons, fewer truncate the list). The extra bones are real
// bones: they are in the skeleton, in every clip (constant tracks, which
// the compressor stores in the clip's default pose at no stream cost), in
// every sampled pose, transformed by local-to-model and skinned. Their
// local rotation is then set in the sampling kernel by a cheap
// oscillation, a wave running down each chain (rig.Extra).
//
// Foot contacts are detected on the source motion (offline.DetectFootContacts)
// and stored as clip events; the root's horizontal travel is removed so
// that the characters dance in their places. Clips recorded faster than
// -clip-rate (30 Hz; CMU records at 120) are resampled to it, as games
// ship animation, then compressed at -tolerance (offline.Compress, a few
// seconds) into one blob, cached in the user cache directory keyed by
// sources and options. The rate is a content decision with a price: 120 Hz
// motion capture played at 60 Hz feeds the sampler several times the curve
// points per second that the 30 Hz resampling does (anim's
// BenchmarkSample: cm=0.1 against cm=0.1/src=30Hz), so -clip-rate 0 shows
// what the raw capture costs.
//
// The default mesh is procedural: one box per bone (8 vertices, 12
// triangles), the four vertices at the bone's head weighted 0.6 to the
// bone and 0.4 to its parent, the four at its tail to the bone, so every
// bone visibly deforms geometry: 720 vertices and 1080 triangles per
// character. -model FILE.gltf loads a glTF character instead through
// anim's glTF import (skeleton, clips; the mesh with qmuntal/gltf, its
// weights renormalised) and draws it as it is, with its own joints; -bones
// N adds procedural chains up to N bones, drawn as boxes. testdata holds
// Khronos' Cesium Man (CC BY 4.0, see testdata/README.md).
//
// # A frame is a task graph
//
// The frame's tasks and edges (frame.go's phases, below):
//
//	clock ──> sample ──> procedural ──> local-to-model ──> skin ──────────────┐
//	  │                                                                       v
//	  └──> events ──> gather ×J ──> join ──> merge-n-sort ──> record ──> submit/present
//
// The phases:
//
//   - sample, three tasks. crowd.clock (streaming over characters, CPU)
//     advances each character's clock (its own clip, time and speed),
//     writes the sampler's inputs and writes the clip events the step
//     crossed into the animation system's event stream (one
//     evstream.Writer per scheduler thread: [type,size][payload] records).
//     anim_sample (package anim's sampling kernel, anim.SampleKernel: the
//     CPU sampler, or its GLSL port with -offload gpu) decodes every
//     character's clip at its time into local poses in kernels.Transform's
//     layout, its cursors kept from frame to frame (GPU-resident with
//     -offload gpu). crowd.procedural (CPU) then writes the extra bones'
//     rotations into the poses (the mapping of the GPU pose buffer when
//     sampling ran there: no copy).
//   - local-to-model (kernels.LocalToModelSkin, streaming over skeletons):
//     model matrices and the skinning palette model × inverse bind.
//   - skin (kernels.SkinLBS, streaming over every vertex of every
//     character: one bind-pose mesh, a palette per character): into the
//     frame's skinned-vertex buffer, which is the vertex buffer the draws
//     read. With -offload gpu, kernels.SkinLBSUniform instead: one task per
//     11 characters, whose 990 palette matrices fit one 64 KiB uniform
//     block (faster than a storage palette on lavapipe; -uniform=false
//     for the single storage-buffer task). With -offload
//     spu, one task per -spu-group characters (their palettes fit the 256
//     KiB local store; the vertices are streamed per item through an SPU
//     binding).
//   - events (crowd.events): consume the frame's event stream: count
//     footsteps, flash the stepping character's colour for a few frames;
//     unknown event types are skipped by their size.
//   - gather (crowd.gather, J jobs): cull each character's bounding
//     sphere against the frame's camera and write one draw packet per
//     visible character (sort key: pipeline, then depth; its mesh is a
//     window of the skinned-vertex buffer) into the job's own
//     render.RenderContext, without locks.
//   - merge-n-sort (render.Renderer.MergeSort) and record
//     (render.Renderer.Record through gfx.Graphics: secondary command
//     buffers recorded in parallel ranges); submit/present (pinned to the
//     main thread) ends the frame: gfx.Graphics.EndFrame submits the
//     primary command buffer and presents, or copies to the read-back
//     buffer offscreen. Without Vulkan (or -render=false) the same steps
//     record into render.CommandRecorder's CPU command lists.
//
// Affinity per -offload: cpu runs sampling, local-to-model and skinning
// on any worker (sched.AnyWorker); gpu runs them as Vulkan compute
// (sched.GPU) with GPU-resident buffers chained cursors → poses → palette
// → skin → vertex buffer, drawn in place with no read-back (only the
// 8-byte sampler inputs go up each frame); auto gives them sched.Auto and
// installs placement.Placer, which learns per-kernel costs and places each
// task (the streams are host mirrors of device buffers, usable from either
// side: on lavapipe the host bytes are the buffer's mapping, so nothing
// is copied); spu sends local-to-model and skinning to spu.Executor
// (sampling stays on the workers: the clip blob does not fit a local
// store).
//
// The frame runs two ways, with the same tasks, edges and results
// (TestGraphMatchesDynamic: the same pixels, the same footsteps):
//
//   - As frame graphs (graph.go; the default, -graph): the tasks and edges
//     are built once into sched.Graphs and replayed. Each frame starts its
//     graphs (sched.Graph.Start) and writes the two parameters that change
//     per frame (the time step, the statistics slot); the CPU nodes run in
//     place in runner tasks, the GPU nodes readied together leave as one
//     recorded command buffer per segment, the others (SPU, Auto, submit/
//     present on the main thread) go through the scheduler as tasks.
//   - As dynamic tasks (-graph=false): the main thread describes each
//     frame in immediate mode (frame.go's issue). A task has one
//     dependency; where a task needs several, the frame adds a join: an
//     empty held parent with one empty child depending on each (the
//     BitSquid task manager's join). Tasks, children and dependencies are
//     created on the fly from pools.
//
// Either way adding a frame allocates nothing.
//
// # The frame pipeline
//
// After Michael T. Mayers, "Thoughts on multithreaded pipeline game engine
// architecture", 2009 (docs/design.md).
//
// -pipeline N runs the frame as N stages; a stage of frame f starts when
// the previous stage of frame f and the same stage of frame f-1 have
// completed (task dependencies between frames), so each stage works on
// one frame at a time and consecutive frames overlap stage by stage:
//
//	N=1  [sample lm skin events gather sort record present]   serial frame
//	N=2  [sample lm skin] [events gather sort record present]  simulate f | render f-1
//	N=3  [sample] [lm skin] [events gather sort record present]
//	N=4  [sample] [lm skin] [events gather sort record] [present]
//
// (With N=4 the recording of frame f also waits for the submit of frame
// f-1: a Vulkan frame begins only after the previous one was submitted.)
// Each stage's results are multi-buffered: frame f uses buffer set f mod N
// (local poses, palettes, the event stream, the camera), and the main
// thread issues frame f only after frame f-N was submitted, when its set
// is free. The skinned vertices need N + 2 sets, because the GPU may
// still draw a frame (two frames in flight in gfx.Graphics) after its
// stages are done. The price is a frame of latency per stage. With N=1
// the events and gather jobs still overlap local-to-model and skinning
// inside the frame (they depend only on sampling); with N>=2 the render
// stage of frame f-1 overlaps the simulation of frame f. Every depth draws
// the same frames: the pipeline changes when work runs, not what it
// computes (TestPipelineDepths checks the images are identical).
//
// # The frame as graphs
//
// A graph run starts after the tasks it is given (sched.Graph.Start's
// after) and a graph runs once at a time, so the pipeline is kept by
// cutting the frame into one graph per stage (record in a graph of its
// own at N=4, so that it alone waits for the previous submit): stage s of
// frame f starts after stage s-1 of frame f and stage s of frame f-1, the
// dynamic frame's stage edges, and frames overlap as they do there. A
// graph names its buffers, so each stage's graph has a copy per vertex
// set, whose count graph mode rounds up to a multiple of N (frame f's
// buffer set f mod N and vertex set are then fixed per copy): frame f
// replays copy f mod C, whose previous run, frame f-C, ended before frame
// f-N was submitted. Rejected: one graph for the whole frame (runs of one
// graph follow each other: no overlap, the pipeline would be serial); a
// graph per phase (a start, a join and a runner per phase: more tasks
// than the dynamic frame). The statistics time each phase with two
// in-place timing nodes around it (a graph's node is no task they could
// track), and the scheduler reports every node run in place to the
// Observer, so the per-kernel counts and the trace show every kernel as
// in the dynamic frame (the trace also shows the graph runners' scopes,
// around the nodes they ran).
//
// The steady state allocates nothing in this program: tasks come from the
// scheduler's pool, contexts and buffers are sized once, the renderer
// reuses its scratch, and the statistics are preallocated atomics. The
// summary prints the measured allocations per frame (runtime.MemStats
// over the timed frames); the few left come from the scheduler's sleeping
// threads and, in a window, from package gpu/present (see the report).
//
// # The picture
//
// The camera stands in front of the crowd, a little above it, as a
// spectator would (camera.set): the rows near the aimed-at point fill the
// picture's width and the rows behind recede towards the horizon. The
// ground reaches far past the fog, whose colour is the sky's, so it meets
// the sky at the horizon instead of ending in the picture; the fog's
// density keeps about three quarters of the back row's colour. A warm
// sun from the upper front left, a bluish sky light from above and a dim
// light bounced from the ground below (gfx.View's hemisphere ambient)
// show the figures' shapes, and a translucent disc under each character
// (one instanced draw, between the ground's and the characters' layers of
// the sort key) sets it on the ground. The CPU and GPU offloads draw the
// same picture (TestHeadlessCPUvsGPU).
//
// # Profiling
//
// -trace FILE.json writes the trace package's Chrome trace: one track per
// scheduler thread, the GPU executor's dispatches on their own track,
// frame markers, task IDs, parents and dependencies as arguments and
// flow arrows. -timeline FILE.svg draws one frame: the last one for
// -pipeline 1; with a pipeline, the interval between the last two frame
// starts, where the stages of consecutive frames overlap. The summary's
// phase times come from the same kernel invocation reports (first start to
// last stop of each phase's invocations); phases that run off the CPU
// workers are timed from their dependency's completion to the completion
// seen by a small CPU task depending on them, because on lavapipe both GPU
// timestamps are taken at the top of the pipe.
//
// # What limits the frame rate
//
// The simulation goals (sampling + local-to-model <= 2 ms, simulation <=
// 16.6 ms for 1000 x 90 bones on 2 cores) are the ones the summary checks.
// With rendering off the simulation has the cores to itself. With
// rendering on lavapipe, its rasterizer threads take the same cores:
// rasterizing and shading 720 000 skinned vertices and 1000 draws at
// 1280x720 on the CPU is what limits the frame rate, and the simulation's
// stages stretch because they share the cores with it; on a GPU the
// rasterization leaves the CPU. Skinning is the biggest CPU stage. The
// measured summaries (render off and on, each -offload, pipeline depths,
// clip rates and codecs) are in BENCHMARKS.md, section crowd.
//
// # Without a display, without Vulkan
//
// With DISPLAY set (and not -headless) the demo opens a resizable window
// (gpu/present, GLFW) showing the frame rate in its title, and runs until
// it is closed. Without a display it renders offscreen and writes a PNG of
// the last frame. Without any Vulkan device it simulates on the CPU, still
// gathers, sorts and records the draw packets on the CPU, skips drawing,
// and says so; -offload=gpu or auto, and -validate, then fail. Only "no
// device" (gpu.ErrNoDevice) leads there: any other failure to open
// Vulkan (a device named by VKJOBS_DEVICE that is not there, a missing
// validation layer, a bad VKJOBS_VALIDATION) ends the run with its error.
package main
