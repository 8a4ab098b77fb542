// Package gfx is the project's Vulkan graphics backend: it implements
// render.Recorder (render pass, graphics pipelines, secondary command
// buffers recorded in parallel, one per range, executed in order by one
// primary), offscreen targets read back after every frame (ReadPixels,
// Image, WritePNG), and the swapchain side of presentation: a window
// system hands it a surface through the Surface hook (package gpu/present
// does so with GLFW), so this package links no window system.
//
// # Where it sits
//
// Package gpu is the compute backend (device, memory, executor); package
// gfx draws on a *gpu.Device and reads GPU buffers (*gpu.Buffer) as vertex,
// index and instance buffers, so the skinning kernel's output is drawn
// without a round trip through Go. Only gfx (and what uses it: gpu/present,
// cmd/crowd) imports render: a compute user of gpu links neither the
// renderer nor this package (gpu's TestComputeLinksNoRenderer checks it
// with go list -deps).
//
// What gfx needs of a Device beyond gpu's public API (Vulkan handles, the
// queue's lock, host-visible staging memory, buffer reference counts,
// device loss, fault injection) it reaches through the internal package
// gpu/internal/devhook, which package gpu fills in its init; nothing of it
// is public API. Every Vulkan function gfx calls through C is loaded into
// its own table (gfx_shim.c in gpu/internal/vkshim, the one package that
// uses cgo) through package gpu's vkGetInstanceProcAddr and the device's
// vkGetDeviceProcAddr, so the process has one Vulkan loader and one
// binding; gfx takes its handle types and constants from vkshim too.
// Failed calls become *gpu.VkError naming the call and its VkResult, as in
// package gpu, and the errors this package defines share package gpu's
// "gpu:" prefix, so every error of the GPU side reads alike.
//
// Rejected alternatives: graphics inside package gpu (every compute user,
// kbench included, would link the renderer), and exported accessors on
// gpu.Device for handles and locks (public API for one in-module user).
//
// # What it is for
//
// Step 3 of the renderer of Niklas Frykholm's "Parallel rendering"
// (BitSquid, 2009; docs/design.md), display-list building, on Vulkan: package
// render gathers draw packets into per-job RenderContexts, merges and
// sorts them by a 64-bit key, splits the sorted stream into ranges and
// calls a render.Recorder for each range on scheduler workers. Graphics is
// that Recorder. It records every range into its own secondary command
// buffer, then executes them in range order (the sorted order) from one
// primary command buffer inside one render pass, submits, and presents
// (window) or reads the image back (offscreen). Its showcase is the crowd
// demo: characters skinned on the GPU by kernels.SkinLBS, whose output
// buffer is bound as the vertex buffer, with no round trip through Go.
//
// # Using it (the crowd demo's frame)
//
//	// Target: offscreen, or a window when there is a display.
//	win, err := present.Open(present.Config{Width: 1280, Height: 720})
//	var opts gpu.Options
//	if err == nil {
//		opts = win.DeviceOptions(opts) // surface + swapchain extensions
//	}
//	dev, _ := gpu.Open(opts)
//	gopts := gfx.GraphicsOptions{Width: 1280, Height: 720} // offscreen...
//	if win != nil {
//		gopts = gfx.GraphicsOptions{Surface: win, VSync: true} // ...or the window
//	}
//	g, _ := gfx.NewGraphics(dev, gopts)
//
//	// Registration (before the frame loop): pipelines and meshes get
//	// render IDs from the same render.Registry MergeSort validates against.
//	reg := render.NewRegistry()
//	lit, _ := g.AddPipeline(reg, gfx.Pipeline{Name: "lit"})
//	skinned, _ := dev.NewBuffer(uint64(chars*nv) * gfx.VertexSize) // the skinning kernel's Out[0]
//	ib, _ := dev.NewBuffer(4 * uint64(len(indices)))                // ib.Write(0, index bytes)
//	for c := range chars {                                          // one mesh per character
//		id, _ := g.AddMesh(reg, gfx.Mesh{Name: "char", Vertices: skinned,
//			VertexOffset: uint64(c*nv) * gfx.VertexSize, VertexCount: nv,
//			Indices: ib, IndexCount: uint32(len(indices))})
//		meshOf[c] = id
//	}
//	boxes, _ := g.NewMesh(reg, "crate", verts, indices, instances) // static, instanced
//
//	// Each frame: skin on the GPU (task.Data.Out[0] = skinned.Stream(24, chars*nv, 0),
//	// Affinity sched.GPU) and wait for it; gather DrawPackets (Pipeline: lit,
//	// Mesh: meshOf[c], VertexCount: len(indices), InstanceCount: 1, Model, Color)
//	// into contexts; then:
//	g.SetView(gfx.View{ViewProj: mgl32.Mat4(gfx.VulkanClip(proj)).Mul4(view), LightDir: ..., ...})
//	sorted, _ := renderer.MergeSort(mainCtx, ctxs, reg)
//	_, err = renderer.Record(mainCtx, sorted, g) // records in parallel, submits, presents
//	if errors.Is(err, gfx.ErrFrameSkipped) { present.WaitEvents(...) } // minimised
//	g.ReadPixels(img) // offscreen: the last frame's pixels (png.Encode(w, img))
//
// # Render pass and targets
//
// One render pass with one subpass: colour attachment 0 (R8G8B8A8_UNORM
// offscreen; B8G8R8A8_UNORM or R8G8B8A8_UNORM with sRGB-nonlinear colour
// space for a window, so that both show the values the shaders wrote) and
// a depth attachment (the first of D32, D32S8, D24S8, D16 the device can
// attach), both cleared at load; the colour ends in TRANSFER_SRC_OPTIMAL
// (offscreen: the primary then copies it into the frame's host-visible
// read-back buffer) or PRESENT_SRC_KHR. An external dependency orders a
// frame's attachment accesses after the previous frame's attachment writes
// and read-back copy, so frames in flight share one colour image (offscreen)
// and one depth image. Because secondaries must name the render pass (and
// here also the framebuffer) when they begin, the framebuffer is chosen in
// BeginFrame, after the swapchain image is acquired.
//
// # Pipelines
//
// All pipelines share one layout: set 0 binding 0 is the frame's uniform
// block (View: view-projection, light direction and colour, ambient),
// written into the frame's own host-visible buffer at BeginFrame; push
// constants are the 80 bytes of render.DrawPacket.PushConstants (model
// matrix, colour), read in place from the render context for each draw.
// Vertex binding 0 is Vertex (position, normal: 24 bytes, the layout of
// kernels.SkinnedVertex), binding 1 (Instanced pipelines) is Instance
// (offset and uniform scale, colour: 32 bytes) at instance rate. The
// built-in shaders (gfx_shaders/lit.vert, lit.frag; SPIR-V generated by
// gen.sh and checked by TestGfxShadersCurrent) do Lambert diffuse from one
// directional light plus ambient (a sky/ground hemisphere when
// View.GroundAmbient is set), times the draw's and the instance's colour,
// then fog with the distance from View.Eye (View.FogDensity); the vertex
// shader hands the fragment shader the world position for it. The
// defaults (no hemisphere, no fog) draw exactly what Lambert plus ambient
// drew (TestGfxGolden). Blend pipelines alpha-blend without depth writes
// (render's key sorts translucent draws back to front). Viewport and scissor are dynamic
// state, so render's StatePackets need no pipeline variants. Sharing one
// layout is what lets a range bind the frame's descriptor set once, at its
// start, whatever pipelines it binds later.
//
// # Frames in flight and secondaries per worker
//
// GraphicsOptions.FramesInFlight (default 2) sets of per-frame resources:
// a fence (created signalled, reset just before the frame's submit), a
// command pool with the primary command buffer, one command pool per
// scheduler thread with the secondaries that thread recorded, the uniform
// buffer and its descriptor set, the read-back buffer (offscreen) and the
// "image acquired" semaphore (window; the "rendering done" semaphores are
// per swapchain image, so a present's semaphore is reused only after that
// image came back). BeginFrame waits for the frame's fence, i.e. for the
// frame FramesInFlight frames back, and resets the primary's pool. A
// worker's first Begin of the frame resets its own pool, so the pools are
// recycled in parallel and without locks: a pool belongs to one worker of
// one frame, and render's protocol guarantees that a worker records one
// range at a time. Secondaries are allocated when a worker needs more than
// ever before and then reused every frame (reset with the pool), so steady
// state allocates neither Go nor C memory (TestGfxFrameAllocs: no allocation
// for a frame of 2000 draws, submit and read-back included). All calls
// that pass arrays or structs go through the C shim (gfx_shim.c, in
// gpu/internal/vkshim beside the compute table shim.c); its functions are
// loaded through package gpu's vkGetInstanceProcAddr, the process's one
// loader. The per-draw call takes a pointer to pointer-free bytes, which
// cgo passes without a run-time check.
//
// A secondary inherits nothing, so every range starts by binding the
// frame's descriptor set and setting a viewport and scissor that cover the
// target; render then re-issues the StatePackets in effect at the range's
// start, and binds the pipeline and mesh before the range's first draw.
//
// # Synchronisation with compute
//
// Compute (gpu.Executor) and graphics submit to the same queue, under the
// device's queue lock (reached through gpu/internal/devhook). Each frame's
// primary starts with a barrier from compute-shader, transfer and host writes to vertex-input, vertex- and
// fragment-shader reads, so a buffer written by a kernel whose task
// completed before the frame is read correctly as vertices; it ends with a
// barrier from those reads to later compute and transfers, so a kernel
// that overwrites the buffer later (the next frame's skinning) waits for
// this frame's reads. One skinned buffer is therefore correct; one per
// frame in flight lets a real GPU overlap frame N+1's skinning with frame
// N's drawing.
//
// # Windows
//
// Package gpu/present owns GLFW (runtime.LockOSThread in its init, NoAPI
// windows) and implements the Surface hook: CreateSurface makes the
// VkSurfaceKHR, FramebufferSize returns the size that GLFW's
// framebuffer-size callback last reported. BeginFrame recreates the
// swapchain (after vkQueueWaitIdle) when that size changed, or when an
// acquire or present returned VK_ERROR_OUT_OF_DATE_KHR or
// VK_SUBOPTIMAL_KHR; while the size is 0×0 (minimised) it returns
// ErrFrameSkipped and records nothing. VSync picks FIFO; without it
// MAILBOX, else IMMEDIATE, else FIFO. Without a display present.Open
// returns ErrNoDisplay and the caller renders offscreen.
//
// # Bad input
//
// A draw naming a pipeline or mesh this Graphics did not register
// (ErrUnknownHandle), a draw outside its mesh's vertices, indices or
// instances, an instanced pipeline on a mesh without instances
// (ErrBadDraw), or an unknown job (ErrUnknownJob) is recorded as the
// range's error and not sent to Vulkan; End returns it, Record returns it,
// and EndFrame submits the frame without any secondary (the clear colour
// only) so that fences and semaphores stay balanced. A viewport of zero
// area or outside the target skips the draws after it (Vulkan forbids the
// first, and the second's coordinates may exceed the device's viewport
// bounds); a scissor is intersected with the target. Custom shaders
// (Pipeline.VertexSPIRV, FragmentSPIRV) are read with package bind's
// SPIR-V reader before they reach the driver: a "main" entry point of the
// stage's model, and descriptors and push constants within the shared
// layout, else AddPipeline fails with gpu.ErrBadBinding (lavapipe crashes
// on a shader of the wrong stage). The tests run with the
// validation layer and fail on any message, leak reports at vkDestroyDevice
// included (TestGfxValidationIsOn shows that such messages do arrive).
//
// # What limits the rate
//
// Recording a draw is one cgo call that pushes the constants and draws,
// cheap beside executing it on a software rasteriser such as lavapipe, so
// there the frame rate is bound by the draws executed, and instancing (one
// draw for many copies of a mesh) is what helps. Recording ranges in
// parallel pays where recording is the bottleneck and cores are real (a
// desktop GPU executes draws far faster than one thread records them).
// Pipeline creation compiles shaders: create pipelines before the frame
// loop.
package gfx
