// Package bind holds the contract between a kernel's GPU shader and the
// Vulkan executor: the Binding that a sched.Kernel's GPU field carries, and
// the project's one SPIR-V reader (ParseSPIRV), with which Binding.Check
// compares a shader with the kernel's declared streams when the kernel is
// registered (CheckStreams, through sched.GPUBinding). It is pure Go and
// imports only package sched, whose contract with executors names no GPU
// package: packages that declare kernels (kernels, anim) do not link
// Vulkan, and CPU-only users of sched link no SPIR-V reader; only package
// gpu, which runs the kernels, links Vulkan.
package bind

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vkjobs/vkjobs/sched"
)

// ErrBadBinding: the binding is invalid (bad SPIR-V, missing entry point,
// workgroup size beyond the device's limits...). gpu.ErrBadBinding is the
// same value.
var ErrBadBinding = errors.New("gpu: invalid GPU binding")

// Binding describes how a registered kernel runs as a Vulkan compute
// dispatch. It is stored in sched.Kernel.GPU; the GPU executor reads it.
//
// Shader interface contract (every kernel shader follows it):
//
//	layout(set = 0, binding = 0..3) buffer      In0..In3   // sched TaskData.In[i]
//	layout(set = 0, binding = 4..7) buffer      Out0..Out3 // sched TaskData.Out[j]
//	   (an input listed in UniformIn is a uniform block instead)
//	layout(push_constant) uniform PC {
//	    uint params[8]; // sched.Params, copied verbatim
//	    uint begin;     // first work item of this dispatch (TaskData.Begin)
//	    uint end;       // one past the last work item   (TaskData.End)
//	};
//	layout(local_size_x_id = 0) in;  // workgroup size, specialization constant 0
//	   (or a fixed X equal to LocalSize: local_size_x = N, HLSL [numthreads(N, 1, 1)])
//
// Invocation g handles work items begin + g*ItemsPerInvocation ... and must
// return when the item is >= end. Streams are bound from their start
// (descriptor offset = element 0 of the stream), so shaders index them with
// absolute item numbers, exactly like the CPU kernel; begin and end may
// differ from 0 and Elements when the scheduler gives the GPU a sub-range,
// and a large range is dispatched in several chunks with their own begin
// and end (maxComputeWorkGroupCount).
//
// What a shader may rely on, and what not:
//   - Host streams (Stream.Bytes) are uploaded only over the bytes the
//     job's items use (all of a Whole-rate stream); the rest of the binding
//     is undefined. Only those bytes of an output are copied back.
//   - Outputs start undefined on the GPU (they are not uploaded): a kernel
//     that reads and writes a stream takes it as an input too (the host
//     slices may alias; saxpy writing y in place passes y as In1 and Out0).
//   - A GPU-resident stream (Stream.Buffer) is bound in place at
//     Stream.Offset, which must be a multiple of the device's
//     minStorageBufferOffsetAlignment (minUniformBufferOffsetAlignment for
//     uniform inputs); at most 256 on every device.
//   - An absent or empty declared stream binds a small dummy buffer.
//   - Compile for Vulkan 1.0 (glslc --target-env=vulkan1.0): the instance is
//     Vulkan 1.0, so SPIR-V 1.0 is accepted. HLSL works through glslc -x
//     hlsl -fshader-stage=compute and glslangValidator -D -V -S comp -e main
//     (docs/gpu-kernels.md has an example).
//   - Declarations the shader never uses are ignored (a shared header may
//     declare all eight bindings), and an input stream the shader never
//     reads needs no binding.
//   - Specialization constant 0 is set to LocalSize only when the
//     workgroup size X is that constant; otherwise the shader's constants
//     keep their defaults.
//   - double, int64_t and int16_t need the device's shaderFloat64,
//     shaderInt64 and shaderInt16 features, which package gpu enables
//     where the device has them; 8- and 16-bit storage (uint8_t,
//     float16_t streams), float16 and int8 arithmetic and other SPIR-V
//     capabilities or extensions that need a feature it does not enable
//     are refused when the pipeline is created (ErrBadBinding naming the
//     capability), never passed to the driver.
//   - layout(scalar) blocks (GL_EXT_scalar_block_layout, a vec3 array of
//     stride 12) need the device's scalarBlockLayout feature, which package
//     gpu enables where the device has it and otherwise refuses the kernel's
//     pipeline (ErrBadBinding naming the feature).
//   - On lavapipe, loop passes are rationed (llvmpipe's loop limiter):
//     one counter per invocation, shared by the SIMD lanes it runs
//     together, for all the shader's loops together; every pass of a loop
//     a lane of the vector reaches takes one, and once the counter is
//     spent every later loop runs at most once, silently. Device.LoopBudget
//     reports that budget; keep a shader's loop passes per invocation
//     below it (counting each loop's exit test as a pass too keeps a bound
//     safe whatever shape the compiler gives the loop), or refuse the
//     tasks that would need more (Admit).
//
// A *Binding is stored in sched.Kernel.GPU (a sched.GPUBinding; Of reads it
// back); Register checks it against the kernel's streams (CheckStreams).
// Its SPIR-V bytes must not change after registration (pipelines are
// cached by their address).
type Binding struct {
	SPIRV              []byte  // the compute module (SPIR-V 1.0, little-endian)
	Entry              string  // entry point, default "main"
	LocalSize          uint32  // workgroup size X (specialization constant 0, or the shader's fixed X), default 64
	ItemsPerInvocation uint32  // work items per invocation, default 1
	UniformIn          [4]bool // inputs bound as uniform blocks instead of storage buffers

	// Admit, when set, is asked before each task of the kernel is
	// dispatched on a device (a graph node's: when its segment is planned,
	// and again before each run): an error fails the task (package gpu
	// wraps it with gpu.ErrRefused and the kernel's name) without
	// dispatching it. A kernel refuses with it what the device would
	// compute wrong without any error, such as a task whose shader would
	// need more loop passes than Device.LoopBudget: failing the task with
	// a reason beats a silently wrong result. It is called for every
	// task on the goroutine that submits it (an executor's submitter, a
	// goroutine whose hand-off of a job to an idle executor submits it at
	// once, or the goroutine that runs a graph segment), so several calls
	// may run at once: it must be safe for concurrent use, cheap, should
	// not allocate unless it refuses, and must not keep td. A panic in it
	// fails that task alone (gpu.ErrExecutorPanic). Nil admits every
	// task.
	Admit func(dev *Device, td *sched.TaskData) error
}

// Device is what Binding.Admit is told of the device that would run a
// task.
type Device struct {
	// Name is the device's name (VkPhysicalDeviceProperties.deviceName).
	Name string
	// LoopBudget is 0 on a device without a known limit on loop passes;
	// on lavapipe (llvmpipe) it is the number of loop passes one
	// invocation may take in all, for all loops of the shader together
	// and shared by the SIMD lanes run with it, before every later loop
	// silently runs at most once (see the contract above). A shader that
	// stays strictly below it is computed exactly.
	LoopBudget uint32
}

// PushConstantSize is the byte size of the push-constant block above.
const PushConstantSize = 40

// Binding slots of the contract.
const (
	FirstInBinding  = 0
	FirstOutBinding = 4
)

// Defaults of Binding's optional fields.
const (
	DefaultEntry     = "main"
	DefaultLocalSize = 64
)

// Stream is what Check needs to know of a declared stream: its name (for
// messages) and its element size in bytes (0 accepts any).
type Stream struct {
	Name   string
	Stride uint32
}

// MaxLocalSize bounds Binding.LocalSize without a device: every Vulkan
// device offers at least 128 invocations per workgroup, none more than 1024
// in X on the desktop. The device's own limits are checked again when the
// pipeline is created.
const MaxLocalSize = 1024

// Validate checks the binding without a device and without the kernel's
// declaration: the SPIR-V module's structure, its entry point, and its
// workgroup size (X specialization constant 0, or fixed at LocalSize; Y =
// Z = 1). Check does this and more.
func (b *Binding) Validate() error {
	if b == nil {
		return fmt.Errorf("%w: nil *bind.Binding", ErrBadBinding)
	}
	_, err := b.module()
	return err
}

// module parses the SPIR-V and checks what does not depend on the kernel.
func (b *Binding) module() (*SPIRVModule, error) {
	m, err := ParseSPIRVEntry(b.SPIRV, b.entry())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBinding, err)
	}
	if err := m.checkEntry(b.entry(), b.localSize()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBinding, err)
	}
	return m, nil
}

// localSize is LocalSize with its default applied.
func (b *Binding) localSize() uint32 {
	if b.LocalSize == 0 {
		return DefaultLocalSize
	}
	return b.LocalSize
}

func (b *Binding) entry() string {
	if b.Entry == "" {
		return DefaultEntry
	}
	return b.Entry
}

// checkEntry checks the version, the entry point and the workgroup size;
// a fixed workgroup size X must equal local, unless local is 0.
func (m *SPIRVModule) checkEntry(entry string, local uint32) error {
	if m.Version > spvMaxVersion {
		return fmt.Errorf("SPIR-V version %d.%d is newer than 1.0, which the Vulkan 1.0 instance accepts (compile with glslc --target-env=vulkan1.0)", m.Version>>16&0xff, m.Version>>8&0xff)
	}
	found := false
	var names []string
	for _, ep := range m.EntryPoints {
		names = append(names, fmt.Sprintf("%q (%s)", ep.Name, modelName(ep.Model)))
		if ep.Name != entry {
			continue
		}
		if ep.Model != ModelGLCompute {
			return fmt.Errorf("entry point %q is a %s shader, want GLCompute", entry, modelName(ep.Model))
		}
		found = true
	}
	if !found {
		return fmt.Errorf("no entry point %q in the module (it has %s)", entry, strings.Join(names, ", "))
	}
	size, fixed := m.WorkgroupSize, m.HasWorkgroupSize
	if !fixed {
		size, fixed = m.LocalSizeModes[entry]
	}
	if !fixed {
		return fmt.Errorf("entry point %q has no workgroup size: declare layout(local_size_x_id = 0) in; (GLSL, workgroup size X = specialization constant 0, set from Binding.LocalSize) or [numthreads(N, 1, 1)] (HLSL, with Binding.LocalSize = N)", entry)
	}
	if size[1] != 1 || size[2] != 1 {
		return fmt.Errorf("workgroup size is %d x %d in Y x Z; the executor dispatches in X only, so declare local_size_y = local_size_z = 1 (the default; HLSL [numthreads(N, 1, 1)])", size[1], size[2])
	}
	if m.LocalSizeXSpecID == 0 {
		return nil // the executor sets X to Binding.LocalSize
	}
	// A fixed X (GLSL local_size_x = N, HLSL [numthreads(N, 1, 1)], or a
	// specialization constant other than 0, which the executor does not
	// set) must be the LocalSize the executor counts items with.
	const how = "set Binding.LocalSize to the shader's workgroup size, or declare layout(local_size_x_id = 0) in; (GLSL) so that the executor sets it"
	switch {
	case size[0] == 0 || size[0] > MaxLocalSize:
		return fmt.Errorf("workgroup size X is %d; it must be 1 to %d", size[0], MaxLocalSize)
	case local != 0 && size[0] != local:
		what := "fixed at"
		if m.LocalSizeXSpecID > 0 {
			what = fmt.Sprintf("specialization constant %d (not 0, so the executor leaves it at its default), which is", m.LocalSizeXSpecID)
		}
		return fmt.Errorf("workgroup size X is %s %d in the shader, but the executor dispatches it with Binding.LocalSize = %d (%d when left 0) and counts items by that: %s", what, size[0], local, DefaultLocalSize, how)
	}
	return nil
}

// Check verifies the binding against the kernel's declared streams (in and
// out, in order, at most MaxStreams each) and returns an error naming every shader binding and
// stream that disagree, or nil. sched.Registry.Register calls it for every
// kernel with a GPU binding, so a kernel whose shader would read or write
// the wrong buffers is refused before any task runs. It checks:
//   - the module (structure, SPIR-V 1.0, a GLCompute entry point named
//     Entry, workgroup size X = specialization constant 0 or fixed at
//     LocalSize (64 when 0), and Y = Z = 1), and LocalSize <= MaxLocalSize;
//   - the push-constant block: at most PushConstantSize bytes, at least
//     the 40 that reach begin and end, both begin and end read by the
//     shader, and not only as elements of an array indexed with a variable
//     (a shader that never reads them computes the wrong items whenever a
//     task is split into ranges, and one whose block is shorter or in
//     another order reads params as its range); members named params,
//     begin or end at the contract's offsets (where the module has names:
//     glslc -O strips them), and a 4-byte member at byte 32 or 36 an
//     integer;
//   - the descriptors the shader statically uses (unused declarations are
//     ignored, so the verdict does not depend on the optimisation level;
//     "uses" and the push-constant reads above mean by the entry point
//     Entry and the functions it calls, not by the module's other entry
//     points, which share its declarations):
//     all in set 0, input i at binding i (a uniform block when
//     UniformIn[i], else a storage buffer, which the shader does not store
//     to: inputs are not copied back), output j at binding 4+j (a storage
//     buffer that is not readonly), and nothing else; every output stored
//     to (an input the shader does not use may have no binding). Pointers
//     are followed through access chains, OpCopyObject and function
//     parameters;
//   - element types where SPIR-V states them: a buffer whose block ends in
//     an array of elements of ElemStride bytes is bound to a stream of
//     Stride bytes only if one divides the other (a vec3 array under
//     std430 has a stride of 16, not the 12 of a packed stream), if the
//     array is the block's only member (at byte 0, where the stream's
//     element 0 is), and if its elements are not padded apart further
//     than the stream's (a float array in a std140 uniform block has a
//     stride of 16).
//
// What Check cannot see: which items a shader indexes (a vec4 array bound
// to a float stream passes, since a shader may read four items at once;
// indexes relative to begin pass), element types of the same size (float
// for uint), two outputs written to each other's binding, push-constant
// members of the contract's sizes in another order when the module has no
// names, which component of a uvec2 at byte 32 is begin, and shared arrays
// smaller than the workgroup (size them with gl_WorkGroupSize.x: an
// access past their end is undefined behaviour, which on lavapipe
// corrupts the process's heap). docs/gpu-kernels.md lists these.
//
// Errors wrap ErrBadBinding.
func (b *Binding) Check(in, out []Stream) error {
	if b == nil {
		return fmt.Errorf("%w: nil *bind.Binding", ErrBadBinding)
	}
	if b.LocalSize > MaxLocalSize {
		return fmt.Errorf("%w: LocalSize %d exceeds %d invocations", ErrBadBinding, b.LocalSize, MaxLocalSize)
	}
	if len(in) > MaxStreams || len(out) > MaxStreams {
		return fmt.Errorf("%w: %d input and %d output streams; the contract binds at most %d each (inputs at bindings %d-%d, outputs at %d-%d)",
			ErrBadBinding, len(in), len(out), MaxStreams, FirstInBinding, FirstInBinding+MaxStreams-1, FirstOutBinding, FirstOutBinding+MaxStreams-1)
	}
	for i, u := range b.UniformIn {
		if u && i >= len(in) {
			return fmt.Errorf("%w: Binding.UniformIn[%d] is set but the kernel declares %d inputs", ErrBadBinding, i, len(in))
		}
	}
	m, err := b.module()
	if err != nil {
		return err
	}
	if m.PushConstantBytes > PushConstantSize {
		return fmt.Errorf("%w: push-constant block is %d bytes, the contract's is %d: layout(push_constant, std430) uniform { uint params[8]; uint begin; uint end; }", ErrBadBinding, m.PushConstantBytes, PushConstantSize)
	}
	var errs []string
	if e := pushConstantMismatch(m); e != "" {
		errs = append(errs, e)
	}
	var seen [FirstOutBinding + MaxStreams]bool
	for _, r := range m.Resources {
		if !r.Used {
			// A declaration the shader never uses is harmless (Vulkan
			// needs descriptors only for what is statically used), and
			// glslc -O would have removed it.
			continue
		}
		if r.Set != 0 {
			errs = append(errs, fmt.Sprintf("binding %d%s, a %s, uses descriptor set %d, the contract has only set 0", r.Binding, r.tag(), r.Kind, r.Set))
			continue
		}
		if r.Kind == ResourceOther || r.Array {
			errs = append(errs, fmt.Sprintf("binding %d%s is a %s (array %v); streams are single buffers", r.Binding, r.tag(), r.Kind, r.Array))
			continue
		}
		if r.Binding >= FirstOutBinding+MaxStreams {
			errs = append(errs, fmt.Sprintf("binding %d%s is outside the contract's bindings 0-%d", r.Binding, r.tag(), FirstOutBinding+MaxStreams-1))
			continue
		}
		if seen[r.Binding] {
			errs = append(errs, fmt.Sprintf("binding %d is declared twice", r.Binding))
			continue
		}
		seen[r.Binding] = true
		if r.Binding < FirstOutBinding {
			i := int(r.Binding - FirstInBinding)
			if i >= len(in) {
				errs = append(errs, fmt.Sprintf("shader binding %d reads input stream %d, but the kernel declares %d inputs%s%s", r.Binding, i, len(in), names(in), r.tag()))
				continue
			}
			want := ResourceStorage
			if b.UniformIn[i] {
				want = ResourceUniform
			}
			if r.Kind != want {
				errs = append(errs, fmt.Sprintf("binding %d (input %q) is a %s in the shader, but Binding.UniformIn[%d] = %v says %s", r.Binding, in[i].Name, r.Kind, i, b.UniformIn[i], want))
				continue
			}
			if r.Written {
				// Inputs are uploaded, never read back: the stores are
				// lost for host streams, silently.
				errs = append(errs, fmt.Sprintf("shader binding %d (input stream %d %q) is written by the shader, but inputs are never copied back: what it stores there is lost; declare the stream as an output too and write that binding (a stream may be both, as saxpy's y)", r.Binding, i, in[i].Name))
				continue
			}
			if e := elemMismatch(r, "input", i, in[i]); e != "" {
				errs = append(errs, e)
			}
			continue
		}
		j := int(r.Binding - FirstOutBinding)
		switch {
		case j >= len(out):
			errs = append(errs, fmt.Sprintf("shader binding %d writes output stream %d, but the kernel declares %d outputs%s%s", r.Binding, j, len(out), names(out), r.tag()))
		case r.Kind != ResourceStorage:
			errs = append(errs, fmt.Sprintf("binding %d (output %q) is a %s; outputs must be storage buffers", r.Binding, out[j].Name, r.Kind))
		case r.ReadOnly:
			errs = append(errs, fmt.Sprintf("binding %d (output %q) is readonly in the shader, so the output is never written", r.Binding, out[j].Name))
		case !r.Written:
			errs = append(errs, neverStored(j, out[j]))
		default:
			if e := elemMismatch(r, "output", j, out[j]); e != "" {
				errs = append(errs, e)
			}
		}
	}
	// An input the shader does not use may lack its binding (the kernel
	// declares it for its CPU function, or the shader ignores it); an
	// output may not, used or not: it would come back undefined.
	for j, s := range out {
		if !seen[FirstOutBinding+j] {
			errs = append(errs, neverStored(j, s))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrBadBinding, strings.Join(errs, "; "))
	}
	return nil
}

// neverStored is the error for output stream j, which the shader never
// stores to: whether glslc removed its unused binding (-O) or kept it (-O0,
// -g), the message is the same.
func neverStored(j int, s Stream) string {
	return fmt.Sprintf("binding %d (output stream %d %q) is never stored to by the shader (outputs are bindings %d-%d), so the output would come back undefined, not zeros", FirstOutBinding+j, j, s.Name, FirstOutBinding, FirstOutBinding+MaxStreams-1)
}

// MaxStreams is the contract's number of input (and of output) bindings;
// sched.MaxStreams is the same number.
const MaxStreams = 4

// names lists the streams' names for messages.
func names(ss []Stream) string {
	if len(ss) == 0 {
		return ""
	}
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s.Name)
	}
	return " (" + strings.Join(q, ", ") + ")"
}

// Words of the push-constant block that hold begin and end.
const (
	beginWord = 8
	endWord   = 9
)

// pushConstantMismatch checks that the shader can know its range: a
// push-constant block that reaches begin and end (bytes 32-39) and reads
// both. A shader that never reads them runs every dispatch as if it began
// at item 0, and the scheduler splits tasks into ranges (and the executor
// splits large ranges into chunks), so most of its work would land on the
// wrong items, silently; one whose block is shorter reads params as begin
// and end and returns at once, leaving its outputs at zero.
func pushConstantMismatch(m *SPIRVModule) string {
	const decl = "declare layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc; and handle item pc.begin + gl_GlobalInvocationID.x when it is below pc.end"
	switch {
	case m.PushConstantBytes == 0:
		return "the shader has no push-constant block, so it cannot know the range of items [begin, end) a dispatch covers (tasks are split into ranges that rarely start at item 0): " + decl
	case m.PushConstantBytes < PushConstantSize:
		return fmt.Sprintf("push-constant block is %d bytes, so it has no begin and end (bytes 32-39 of the contract's block; what it reads as begin and end are params): %s", m.PushConstantBytes, decl)
	}
	if e := pushConstantLayout(m.PushConstantMembers); e != "" {
		return e + "; " + decl
	}
	var miss []string
	if m.PushConstantRead&(1<<beginWord) == 0 {
		miss = append(miss, "32-35 (begin)")
	}
	if m.PushConstantRead&(1<<endWord) == 0 {
		miss = append(miss, "36-39 (end)")
	}
	if len(miss) > 0 {
		return fmt.Sprintf("the shader never reads push-constant bytes %s: its block's members are not in the contract's order, or it ignores the range it is given; %s", strings.Join(miss, " and "), decl)
	}
	// Read, but only as elements of an array indexed with a variable (in
	// { uint begin; uint end; uint params[8]; }, params[k] reaches bytes
	// 32-39): the shader does not read begin and end as such.
	for _, w := range []struct {
		word uint
		name string
	}{{beginWord, "32-35 (begin)"}, {endWord, "36-39 (end)"}} {
		if m.PushConstantReadExact&(1<<w.word) == 0 {
			miss = append(miss, w.name)
		}
	}
	if len(miss) > 0 {
		return fmt.Sprintf("the shader reads push-constant bytes %s only through an array indexed with a variable, never on their own: its block's members are not in the contract's order (begin and end are the uints at bytes 32 and 36); %s", strings.Join(miss, " and "), decl)
	}
	return ""
}

// contractMembers are the offsets of the contract's push-constant members,
// by name.
var contractMembers = map[string]uint32{"params": 0, "begin": 4 * beginWord, "end": 4 * endWord}

// pushConstantLayout checks the push-constant block's members against the
// contract: by their names where the module kept them (glslc without -O,
// -g, HLSL), a member named params, begin or end must be at the contract's
// offset; by their offsets and types always, a 4-byte member at byte 32
// or 36 must be an integer. Without names, members of the same sizes in
// another order (params[8], end, begin) cannot be told from the contract's.
func pushConstantLayout(ms []SPIRVMember) string {
	for _, mem := range ms {
		if want, ok := contractMembers[mem.Name]; ok && mem.Offset != want {
			return fmt.Sprintf("push-constant member %q is at byte %d, but the contract's %s is at byte %d: declare the members in the contract's order", mem.Name, mem.Offset, mem.Name, want)
		}
	}
	for _, w := range []struct {
		at   uint32
		name string
	}{{4 * beginWord, "begin"}, {4 * endWord, "end"}} {
		for i, mem := range ms {
			if mem.Offset == w.at && mem.Size == 4 && !mem.Scalar {
				l := fmt.Sprintf("member %d", i)
				if mem.Name != "" {
					l = fmt.Sprintf("member %d (%q)", i, mem.Name)
				}
				return fmt.Sprintf("push-constant %s at bytes %d-%d, the contract's %s, is not a 32-bit integer (uint or int)", l, w.at, w.at+3, w.name)
			}
		}
	}
	return ""
}

// elemMismatch compares the element the shader indexes with the stream's
// stride; it returns "" when they are compatible or unknown.
func elemMismatch(r SPIRVResource, dir string, i int, s Stream) string {
	if r.ElemStride == 0 || s.Stride == 0 {
		return ""
	}
	if r.ElemOffset != 0 {
		// Stream element k is at byte k*Stride of the binding; the
		// shader's array element k at ElemOffset + k*ElemStride.
		return fmt.Sprintf("binding %d (%s stream %d %q): the block's array starts at byte %d, after other members, but the stream's element 0 is the binding's byte 0, so the shader's element k is not the stream's element k (make the array the block's only member, or declare the stream with stride 0 if its bytes really are a header and an array)", r.Binding, dir, i, s.Name, r.ElemOffset)
	}
	if s.Stride%r.ElemStride != 0 && r.ElemStride%s.Stride != 0 {
		return fmt.Sprintf("binding %d (%s stream %d %q) indexes elements of %d bytes, but the stream's stride is %d bytes (a vec3 array has a stride of 16 under std430: use float[] or a packed struct)", r.Binding, dir, i, s.Name, r.ElemStride, s.Stride)
	}
	if s.Stride < r.ElemStride && r.ElemSize != 0 && r.ElemSize < r.ElemStride {
		// A padded array (std140 scalars and vec2s, vec3 under std430)
		// never matches a stream packed tighter than its stride.
		return fmt.Sprintf("binding %d (%s stream %d %q) is an array of %d-byte elements padded to a stride of %d bytes, but the stream's elements are %d bytes apart (a uniform block is std140, where float and vec2 arrays have a stride of 16, and a vec3 array has a stride of 16 under std430: use a storage buffer, vec4 elements or a packed struct)", r.Binding, dir, i, s.Name, r.ElemSize, r.ElemStride, s.Stride)
	}
	return ""
}

// spvMaxVersion is SPIR-V 1.0, what a Vulkan 1.0 instance accepts.
const spvMaxVersion = 0x00010000

// CheckSPIRV checks a module's structure and its entry point before it
// reaches the driver (some drivers, lavapipe among them, may crash on a
// malformed module): the header, that every instruction fits, SPIR-V 1.0,
// that entry is a GLCompute entry point and that its workgroup size is
// 1 to MaxLocalSize in X (specialization constant 0, or fixed: it has no
// Binding to compare that with) and 1 in Y and Z. It is no substitute for
// spirv-val, which the build runs on every module.
func CheckSPIRV(code []byte, entry string) error {
	m, err := ParseSPIRV(code)
	if err != nil {
		return err
	}
	return m.checkEntry(entry, 0)
}
