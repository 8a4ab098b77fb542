// Package bind holds the contract between a kernel's GPU shader and the
// Vulkan executor: the Binding that a sched.Kernel's GPU field carries. It is
// pure Go, so packages that declare kernels (package kernels, anim) do not
// link Vulkan; only package gpu, which runs them, does.
package bind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
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
//     Vulkan 1.0, so SPIR-V 1.0 is accepted.
//   - On lavapipe, a loop ends after about 65535 iterations per invocation
//     (llvmpipe's loop limiter), silently: bound per-invocation loops.
//
// A Binding is stored by value or pointer in sched.Kernel.GPU. Its SPIR-V
// bytes must not change after registration (pipelines are cached by their
// address). Validate checks it without a device.
type Binding struct {
	SPIRV              []byte  // the compute module (SPIR-V 1.0, little-endian)
	Entry              string  // entry point, default "main"
	LocalSize          uint32  // workgroup size X (specialization constant 0), default 64
	ItemsPerInvocation uint32  // work items per invocation, default 1
	UniformIn          [4]bool // inputs bound as uniform blocks instead of storage buffers
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

// Validate checks the binding without a device: the SPIR-V module's
// structure, its entry point and its specialization constant 0. Device
// limits (workgroup size, descriptor counts) are checked when the pipeline
// is created.
func (b *Binding) Validate() error {
	entry := b.Entry
	if entry == "" {
		entry = DefaultEntry
	}
	if err := CheckSPIRV(b.SPIRV, entry); err != nil {
		return fmt.Errorf("%w: %v", ErrBadBinding, err)
	}
	return nil
}

// SPIR-V constants used by CheckSPIRV.
const (
	SPVMagic          = 0x07230203 // first word of a SPIR-V module
	SPVOpEntryPoint   = 15         // OpEntryPoint opcode
	spvOpDecorate     = 71
	spvDecorSpecID    = 1
	SPVModelGLCompute = 5          // GLCompute execution model
	spvMaxVersion     = 0x00010000 // SPIR-V 1.0: what a Vulkan 1.0 instance accepts
)

// CheckSPIRV checks a module's structure before it reaches the driver: a
// malformed module would be reported by the validation layer, and some
// drivers (lavapipe among them) may crash on one. It checks the header,
// that every instruction fits, that entry is a GLCompute entry point, and
// that some constant is specialization constant 0 (local_size_x_id = 0).
// It is no substitute for spirv-val, which the build runs on every module.
func CheckSPIRV(code []byte, entry string) error {
	if len(code) < 20 || len(code)%4 != 0 {
		return fmt.Errorf("SPIR-V module of %d bytes: not a whole number of words, or shorter than the header", len(code))
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(code[4*i:]) }
	n := len(code) / 4
	switch word(0) {
	case SPVMagic:
	case 0x03022307:
		return fmt.Errorf("SPIR-V module is big-endian; only little-endian modules are accepted")
	default:
		return fmt.Errorf("not a SPIR-V module (magic %#08x, want %#08x)", word(0), SPVMagic)
	}
	if v := word(1); v > spvMaxVersion {
		return fmt.Errorf("SPIR-V version %d.%d is newer than 1.0, which the Vulkan 1.0 instance accepts (compile with glslc --target-env=vulkan1.0)", v>>16&0xff, v>>8&0xff)
	}
	var entries []string
	found, spec0 := false, false
	for i := 5; i < n; {
		op, wc := word(i)&0xffff, int(word(i)>>16)
		if wc == 0 || i+wc > n {
			return fmt.Errorf("SPIR-V instruction at word %d (opcode %d) has word count %d, past the end of the module (%d words)", i, op, wc, n)
		}
		switch op {
		case SPVOpEntryPoint:
			if wc >= 4 && word(i+1) == SPVModelGLCompute {
				name := literal(code[4*(i+3) : 4*(i+wc)])
				entries = append(entries, name)
				found = found || name == entry
			}
		case spvOpDecorate:
			if wc >= 4 && word(i+2) == spvDecorSpecID && word(i+3) == 0 {
				spec0 = true
			}
		}
		i += wc
	}
	if !found {
		return fmt.Errorf("SPIR-V module has no GLCompute entry point %q (it has %q)", entry, entries)
	}
	if !spec0 {
		return fmt.Errorf("SPIR-V module has no specialization constant 0: declare layout(local_size_x_id = 0) in")
	}
	return nil
}

// literal decodes a SPIR-V literal string (NUL-terminated, word padded).
func literal(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}
