// Package kernels is the project's kernel library: for each kernel ID a
// pure-Go CPU implementation and a GPU binding (GLSL compute shader compiled
// to SPIR-V, embedded by package shaders), registered together in a
// sched.Registry.
//
// # The registry
//
// Register(reg) registers every kernel of the package under its ID
// (SkinLBS ... Saxpy): fixed IDs, below sched.FirstHandedID; other
// libraries take the IDs the registry hands out (RegisterNext,
// RegisterBlock), which never meet these. Before registering anything it builds each kernel with
// Definition and checks it with Check; if any check fails or any ID is taken,
// it registers nothing. A registered kernel is a sched.Kernel: a name (also
// its shader's name in package shaders), a Kind (Streaming, Reduce or
// Expand) with its Factor, the declared input and output streams
// (sched.StreamSpec: name, stride in bytes, Rate), a default split Grain, the
// CPU function and, in the GPU field, a *gpu.Binding holding the SPIR-V.
//
// Every output stream is PerItem, so a range [Begin, End) writes exactly
// its items' output elements (times Factor for Expand): an executor may copy
// back just that slice, and ranges run on different devices never overwrite
// each other's results. Whole streams are inputs only (meshes, palettes,
// parent tables).
//
// The scheduler validates every task against the declaration (strides,
// counts: a PerItem stream has one element per work item, times Factor on
// the many side; a Whole stream is read in full by every range). CPU
// functions then check what the declaration cannot express (device-only or
// misaligned memory, indices, Params, Whole streams too short, an output
// sharing memory with an input or another output: only Saxpy runs in
// place, out = x or y exactly) and return an error, never panic. Without
// errors they allocate nothing (tested with testing.AllocsPerRun). The GPU
// executor does not look: host streams are copied before a dispatch, so
// overlapping ones compute from the inputs as they were, while device
// buffers are bound as they are and race in the shader. A task that may
// run on either side must not overlap its streams.
//
// # The shader contract
//
// Every shader follows gpu.Binding's contract (shaders/common.glsl holds it):
// descriptor set 0; input stream i at binding i, output stream j at binding
// 4+j, as std430 storage buffers (an input flagged in Binding.UniformIn is a
// std140 uniform block instead); push constants {uint params[8]; uint begin;
// uint end;} (40 bytes, std430) carrying sched.Params and the range;
// layout(local_size_x_id = 0) in; invocation g handles work item begin+g and
// returns when that is >= end. Streams are bound whole, so shaders index
// them with absolute item numbers like the Go code.
//
// Check (bind.Binding.Check, which sched.Registry.Register also calls for
// every kernel) enforces the contract when a kernel is registered, with the
// project's SPIR-V reader (bind.ParseSPIRV, also ParseSPIRV here: header,
// OpEntryPoint, DescriptorSet/Binding decorations, uniform versus storage
// blocks, array strides, NonWritable, push-constant size, the workgroup
// size). It refuses a wrong entry point or
// execution model, a fixed workgroup size, a push-constant block other
// than the contract's 40 bytes or one whose begin and end are never read,
// a set other than 0, a binding outside 0-7 or declared twice, a binding the
// kernel does not declare, a declared stream without a binding, a
// uniform/storage mismatch with Binding.UniformIn, a readonly output, an
// input the shader stores to (inputs are never copied back), an
// element size that neither divides nor is divided by the stream's stride,
// an array after other members of its block or padded apart further than
// the stream's elements (std140),
// and a workgroup that is not X x 1 x 1, each with an error naming the
// kernel, the binding and the stream. shaders/check.sh (run by the shaders package's
// test and by the Makefile) recompiles every source, fails on stale .spv
// files and runs spirv-val.
//
// # Kernels and stream layouts
//
// All layouts are std430; the Go element types (Mat4, SkinVertex,
// SkinnedVertex, Transform, DualQuat, MinMax, Segment) have exactly those
// bytes (TestLayouts pins sizes and offsets). "in i"/"out j" are
// TaskData.In[i]/Out[j] and bindings i/4+j. n is TaskData.Elements.
//
//	SkinLBS, SkinLBSUniform          Streaming, item = output vertex, grain 2048
//	  in 0  vertices  SkinVertex 48 B  Whole  bind-pose mesh
//	  in 1  palette   Mat4 64 B        Whole  column-major affine skinning matrices
//	                                          (SkinLBSUniform: uniform block, <= 1024)
//	  out 0 skinned   SkinnedVertex 24 B PerItem
//	  Params[0] vertices per instance V (0: item i is vertex i), Params[1] bones per instance S
//	SkinDQS, SkinDQSUniform          as SkinLBS, but
//	  in 1  palette   DualQuat 32 B    Whole  (SkinDQSUniform: uniform block, <= 2048)
//	LocalToModel                     Streaming, item = skeleton, grain 8
//	  in 0  local     B x Transform (stride 48B) PerItem  parent-relative bone transforms
//	  in 1  parents   int32 4 B        Whole  >= B entries; parent < child, negative = root
//	  out 0 model     B x Mat4 (stride 64B) PerItem      model = model[parent] * T*R*S
//	  Params[0] bones per skeleton B
//	LocalToModelSkin                 as LocalToModel, plus
//	  in 2  inverse_bind Mat4 64 B     Whole  >= B entries
//	  out 1 skin      B x Mat4 (stride 64B) PerItem      skin = model * inverse_bind
//	SumF32                           Reduce, Factor 256, grain 64
//	  in 0  x float32 (n*256) -> out 0 sums float32 (n); Params[0] valid inputs (0 = all)
//	MinMaxF32                        Reduce, Factor 256
//	  in 0  x float32 (n*256) -> out 0 MinMax 8 B (n); NaNs ignored, empty = (+Inf, -Inf)
//	Avg32F32                         Reduce, Factor 32: "the average of every 32 elements" (see below)
//	  in 0  x float32 (n*32)  -> out 0 avg float32 (n); empty block = 0
//	ExpandLerp                       Expand, Factor 8
//	  in 0  segments Segment 8 B (n) -> out 0 samples float32 (n*8): A + (B-A)*k/8
//	ScanReduceU32                    Reduce, Factor 256: block totals, uint32 wrapping
//	  in 0  values uint32 (n*256) -> out 0 totals uint32 (n); Params[0] valid inputs
//	ScanDownsweepU32                 Expand, Factor 256: exclusive scan of each block
//	  in 0  offsets uint32 (n) PerItem, in 1 values uint32 Whole -> out 0 scan uint32 (n*256)
//	CRC32CBlocks                     Reduce, Factor 1024 words (4 KiB)
//	  in 0  data uint32 words (n*1024) -> out 0 crc uint32 (n); Params[0] valid bytes
//	Saxpy                            Streaming, grain 16384
//	  in 0 x float32, in 1 y float32 -> out 0 float32 = a*x + y; a = math.Float32bits in Params[0]
//
// Skinning serves many characters per dispatch. With Params[0] = V > 0,
// item i skins vertex i%V of instance i/V with palette base
// vertices[i%V].Palette + (i/V)*Params[1]: one bind-pose mesh and one palette
// of all characters' bones (the crowd). With Params[0] = 0, item i skins
// vertex i with base vertices[i].Palette: meshes of different characters
// concatenated. Joint indices are 8 bits relative to the base, so a skeleton
// may have up to 256 bones. The uniform-palette variants hold the palette in
// one 64 KiB uniform block (UniformPaletteBytes): a GPU task must bind that
// whole size even for a shorter palette (pad the stream); their CPU
// functions refuse a palette longer than the block. On lavapipe the uniform
// block is faster than the storage buffer, and DQS outruns LBS there, gathering half as many palette
// bytes per vertex (BenchmarkGPUSkinPalette; figures in BENCHMARKS.md,
// section kernels).
//
// Reduce and Expand are the task kinds of Stefan Reinalter's task model
// ("Building a load-balanced task scheduler - Part 2: Task model",
// Molecular Musings, April 2012,
// https://blog.molecular-matters.com/2012/04/), whose example of an N:1
// task, "the average of every 32 elements", is Avg32F32.
//
// # Composing a multi-range scan
//
// An exclusive scan cannot be split into independent ranges: each range
// needs the sum of everything before it. AddScan builds it from split-safe
// passes whose block structure is fixed by the kernels' Factor rather than
// by how the scheduler (or a GPU executor) cuts ranges: ScanReduceU32 writes
// per-block totals (repeated on the totals while more than one block
// remains), the top level is scanned from offset 0, and ScanDownsweepU32
// scans each block from its offset (the scanned totals of the level above).
// This is the "per-range scan + block sums + add" scheme with the add fused
// into the second scan pass. The tasks form a dependency chain.
//
// # Checksums
//
// CRC32CBlocks computes CRC-32C (Castagnoli, as hash/crc32) per 4 KiB block;
// the CPU uses hash/crc32 (hardware instructions), the shader a 256-entry
// table that each workgroup builds in shared memory (lavapipe compiles a
// constant array indexed by data far too slowly at the first dispatch),
// and both agree bit for bit. CRC32COfBlocks combines the block
// CRCs into the CRC of the whole stream (CRC32CCombine, zlib's method).
//
// # Tolerances: what a GPU result must match
//
// A GPU test runs a kernel on both devices and compares outputs:
//
//	ScanReduceU32, ScanDownsweepU32, CRC32CBlocks   bit-exact
//	SumF32, Avg32F32 (full blocks), ExpandLerp, Saxpy
//	    bit-exact against the Go code for normal (non-denormal) inputs: the
//	    shaders use `precise` (no fused multiply-add, no reassociation) and
//	    the Go code rounds each product with an explicit float32 conversion,
//	    so both compute the same operations in the same order. GPUs may
//	    flush denormals to zero. The AVX2 sums (SumF32, Avg32F32) are within
//	    (factor+16) * 2^-24 * scale * sum |x| of the block of the GPU's
//	    (TestGPUMatchesCPU checks both).
//	MinMaxF32                        exact, except that -0 and +0 may differ
//	Avg32F32 (partial blocks)        3 ULP (Vulkan allows 2.5 ULP for division)
//	SkinLBS*, SkinDQS*               |gpu-cpu| <= 2e-5 * max(1, |cpu|) per component
//	LocalToModel*                    |gpu-cpu| <= 1e-4 * max(1, |cpu|) (errors grow down the chain)
//
// The float tolerances cover fused multiply-add (Go may fuse on GOAMD64=v3,
// GPU compilers do), summation order inside matrix products, and the
// 2-ULP sqrt/inversesqrt of GLSL. The CPU kernels themselves are tested
// against independent float64 references with the same bounds.
//
// # Direct calls: one character per step
//
// ToModel, ToModelSkin, Palette, LBS and DQS (direct.go) run the CPU code
// of the LocalToModel, LocalToModelSkin, SkinLBS and SkinDQS kernels on
// the caller's goroutine for one skeleton or mesh, without a registry or
// scheduler: the per-step form, of which the tasks are the batch form. They
// take the kernels' element types (Transform, Mat4, DualQuat, SkinVertex)
// and what the importer gives (inverse bind matrices as [][16]float32,
// joints as [4]uint16 through SkinVertices and JointsOf, which refuse a
// joint above MaxSkinJoint); DualQuatFromMatrix and DualQuatPalette turn a
// matrix palette into DQS's. TransformsOf and Mat4sOf view flat float32
// (anim.SampleJob's poses) as Transform and Mat4 without a copy, and
// PerSkeleton makes them the one-skeleton-per-item streams of the
// local-to-model tasks. They never allocate. ToModelGo is ToModel always in Go, the same
// bits on every machine.
//
// # CPU paths: the Go reference and the AVX2 assembly
//
// Every kernel's Go code is the reference and the fallback: it computes
// the shader's operations in the shader's order. On amd64 CPUs with AVX2
// and FMA (golang.org/x/sys/cpu, checked at init) most kernels run
// assembly instead; KERNELS_GO=1 makes the tests run the Go code (the
// Makefile does both), and the purego build tag removes the assembly. Each
// assembly path's tolerance against the Go code:
//
//	SkinLBS*  lbsAVX2 (skin_amd64.s), one vertex per iteration, two matrix
//	          columns per ymm register                             bit-exact
//	SkinDQS*  dqsAVX2 (dqs_amd64.s), eight vertices per iteration, one
//	          per lane of every ymm register                       bit-exact
//	LocalToModel*  poseChainAVX2 (pose_amd64.s), FMA      |asm-go| <= 1e-5 x magnitude
//	ScanReduceU32, ScanDownsweepU32, ExpandLerp, Saxpy
//	          stream_amd64.s                                       bit-exact
//	MinMaxF32 stream_amd64.s: equal values; -0 and +0 may differ where a block holds both
//	SumF32, Avg32F32 (whole blocks)  stream_amd64.s, 32 partial sums
//	          |asm-go| <= (factor+16) * 2^-24 * scale * sum |x| of the block
//	CRC32CBlocks  hash/crc32 (the CRC32 instruction) in both paths
//
// "Bit-exact" holds for the gc compiler below GOAMD64=v3; with v3 it fuses
// the Go code's multiply-adds itself and the skinning paths then differ by
// a few ULPs (the tests check a relative tolerance there). The assembly
// computes without FMA wherever the Go code's bits can be kept, at some
// cost in speed (FMA in LBS is faster but moves short normals by more
// than 1e-6); the float sums cannot be kept both fast and in index
// order (a single chain of adds is bound by the add latency, not by
// memory), so they have the tolerance above, which is also what they must
// match on the GPU (whose shaders sum in index order). Partial blocks (a
// valid count that ends inside a block) run the Go loop.
//
// Rejected alternatives (measured on one goroutine; BENCHMARKS.md, section
// kernels): for LBS, a 48-byte 3x4 palette, SoA input and output, 8-bit
// packed weights in a 32-byte vertex and a branch skipping zero weights
// are all slower than the registered 48-byte AoS vertex with float
// weights; vectorising the sums across blocks (one block per lane, which
// keeps index order) needs a transpose that costs more shuffles than the
// loads it feeds. DQS runs eight vertices per iteration, one per lane of
// every register, because a single vertex is a long chain of dependent
// latency that leaves the out-of-order core waiting: with eight, every
// arithmetic instruction serves eight vertices, which pays for the
// shuffles that transpose the rows in-lane on load and store, and the next
// group's indices and weights are read in the shadow of the square root
// and division. Lanes that carry no result hold ordinary floats (zeroed),
// since a denormal costs a slow microcode assist in every instruction
// that reads it.
//
// cmd/kbench states every CPU kernel's speed as a fraction of its bound,
// the copy bound of its bytes or a compute bound from its arithmetic per
// element and the core's measured clock, whichever is slower.
package kernels
