// Package kernels is the project's kernel library: for each kernel ID a
// pure-Go CPU implementation and a GPU binding (GLSL compute shader compiled
// to SPIR-V, embedded by package shaders), registered together in a
// sched.Registry.
//
// # The registry
//
// Register(reg) registers every kernel of the package under its ID
// (SkinLBS ... Saxpy, IDs 1 to FirstFree-1; other packages start at
// FirstFree). Before registering anything it builds each kernel with
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
// misaligned memory, indices, Params, Whole streams too short) and return an
// error, never panic. Without errors they allocate nothing (tested with
// testing.AllocsPerRun).
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
// Check enforces the contract when a kernel is registered, with a small
// SPIR-V reader (ParseSPIRV: header, OpEntryPoint, DescriptorSet/Binding
// decorations, uniform versus storage blocks, push-constant size, the
// workgroup-size specialization constant). It refuses a wrong entry point or
// execution model, a fixed workgroup size, an oversized push-constant block,
// a set other than 0, a binding outside 0-7 or declared twice, a binding the
// kernel does not declare, a declared stream without a binding, and a
// uniform/storage mismatch with Binding.UniformIn, each with an error naming
// the kernel and the binding. shaders/check.sh (run by the shaders package's
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
//	Avg32F32                         Reduce, Factor 32: the seed's "average of every 32 elements"
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
// functions refuse a palette longer than the block. Measured on lavapipe
// (BenchmarkGPUSkinPalette, 1M vertices, GPU-resident buffers, dispatch
// time, median of 5 interleaved runs), the uniform block is faster, though
// not the 2x of VULKAN_NOTES.md: LBS 38.8 against 27.8 Mvert/s (1.4x), DQS
// 44.1 against 37.8 (1.17x); DQS outruns LBS on lavapipe, which gathers
// half as many palette bytes per vertex.
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
// table that each workgroup builds in shared memory (a constant array
// indexed by data took lavapipe more than 10 s to compile at the first
// dispatch), and both agree bit for bit. CRC32COfBlocks combines the block
// CRCs into the CRC of the whole stream (CRC32CCombine, zlib's method).
//
// # Tolerances: what a GPU result must match
//
// A GPU test runs a kernel on both devices and compares outputs:
//
//	ScanReduceU32, ScanDownsweepU32, CRC32CBlocks   bit-exact
//	SumF32, Avg32F32 (full blocks), ExpandLerp, Saxpy
//	    bit-exact for normal (non-denormal) inputs: the shaders use `precise`
//	    (no fused multiply-add, no reassociation) and the Go code rounds each
//	    product with an explicit float32 conversion, so both compute the same
//	    operations in the same order. GPUs may flush denormals to zero.
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
// # Measured speed (this 2-vCPU machine, Go 1.26, see bench_test.go)
//
// Skinning 1M vertices (256 characters x 4096 vertices, 90 bones), Mvert/s,
// quiet machine (other jobs running on the same two cores halve the
// parallel figures):
//
//	                     1 goroutine   scheduler   2 hand-split goroutines
//	LBS                      50-54      105-106          105-106
//	LBS, GOAMD64=v3          68-70        133            128-131
//	DQS                      27-29        56               54-56
//	DQS, GOAMD64=v3            29          57                57
//
// The scheduler matches hand-split goroutines, allocation-free (the
// goroutines cost 4 allocations per run). Layout variants of LBS on one
// goroutine, measured, not guessed: the registered 48-byte AoS vertex with
// float weights is fastest (54 Mvert/s); a 48-byte 3x4 palette gains nothing
// (42-51); SoA input and output is 17% slower (44-45); 8-bit packed weights
// in a 32-byte vertex are 25% slower (37-41: the decode costs more than the
// 16 bytes saved); skipping zero weights with a branch is 24% slower (41,
// mispredicted). Other kernels, one goroutine: CRC32CBlocks 20 GB/s
// (hardware CRC), SumF32 8 GB/s, Avg32F32 11 GB/s, MinMaxF32 3.4 GB/s,
// ScanReduceU32 11 GB/s, a full 1M-value AddScan about 1 ms, saxpy of 1M
// (L3-resident) 0.45 ms, 0.25 ms through the scheduler; LocalToModelSkin of
// 1000 90-bone skeletons 0.72 ms, 8 ns per bone, with the AVX2+FMA assembly
// (pose_amd64.go; pure Go 2.6 ms, 29 ns per bone; medians of 5 interleaved
// runs; cmd/crowd's BenchmarkLocalToModel, thread CPU time: 2.32 -> 0.74
// ms, 26 -> 8.3 ns per bone), 0.79 ms through the scheduler (2.8 ms), which
// no longer gains from the second core (probably memory-bound: some 300
// bytes of traffic per bone). Run: go test -run '^$' -bench . ./kernels/
//
// The skinning figures above are the pure-Go LBS. On amd64 with AVX2 the
// SkinLBS kernels run lbsAVX2 (skin_amd64.go) per run of vertices within
// one instance; it computes the Go code's bits (no FMA) and reports bad
// joints at the same vertex. One goroutine, crowd shape, medians of 6
// interleaved runs (BenchmarkSkinLBSPath): 2 joints 14.0 -> 4.9 ns per
// vertex (2.9x), 4 joints 18.1 -> 6.3 (2.9x), the mixed 1-4 weights 19.6
// -> 5.6 (3.5x: Go loses more to the mispredicted joint-count branch). KERNELS_GO=1
// makes the tests run the pure-Go paths of both assembly kernels.
package kernels
