package bind

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// This file is the project's one SPIR-V reader: just enough of the binary
// format (SPIR-V specification, section 2.3 "Physical Layout") to check a
// compute module against the kernel that ships it (Binding.Check). It never panics and never
// allocates more than a small multiple of its input, whatever the bytes.

// SPIR-V numbers used below (SPIR-V specification, section 3).
const (
	spirvMagic = SPVMagic

	opMemberName            = 6
	opName                  = 5
	opLine                  = 8
	opExtInst               = 12
	opCapability            = 17
	opExtension             = 10
	opEntryPoint            = 15
	opExecutionMode         = 16
	opTypeInt               = 21
	opTypeFloat             = 22
	opTypeVector            = 23
	opTypeMatrix            = 24
	opTypeArray             = 28
	opTypeRuntimeArray      = 29
	opTypeStruct            = 30
	opTypePointer           = 32
	opConstant              = 43
	opFunction              = 54
	opFunctionParameter     = 55
	opFunctionEnd           = 56
	opFunctionCall          = 57
	opLoad                  = 61
	opStore                 = 62
	opCopyMemory            = 63
	opCopyMemorySized       = 64
	opAccessChain           = 65
	opInBoundsAccessChain   = 66
	opPtrAccessChain        = 67
	opArrayLength           = 68
	opCopyObject            = 83
	opBitcast               = 124
	opSelect                = 169
	opAtomicLoad            = 227
	opAtomicStore           = 228
	opAtomicFirstRMW        = 229 // OpAtomicExchange
	opAtomicLastRMW         = 242 // OpAtomicXor
	opPhi                   = 245
	opNoLine                = 317
	opAtomicFMinEXT         = 5614
	opAtomicFMaxEXT         = 5615
	opAtomicFAddEXT         = 6035
	opConstantComposite     = 44
	opSpecConstant          = 50
	opSpecConstantComposite = 51
	opVariable              = 59
	opDecorate              = 71
	opMemberDecorate        = 72

	decSpecID        = 1
	decBlock         = 2
	decBufferBlock   = 3
	decArrayStride   = 6
	decBuiltIn       = 11
	decNonWritable   = 24
	decBinding       = 33
	decDescriptorSet = 34
	decOffset        = 35

	builtInWorkgroupSize = 25

	execModeLocalSize = 17

	scUniformConstant = 0
	scUniform         = 2
	scPushConstant    = 9
	scStorageBuffer   = 12

	// ModelGLCompute is the SPIR-V execution model of compute shaders.
	ModelGLCompute = 5
)

// SPVMagic is the first word of a SPIR-V module.
const SPVMagic = 0x07230203

var modelNames = map[uint32]string{0: "Vertex", 1: "TessellationControl", 2: "TessellationEvaluation",
	3: "Geometry", 4: "Fragment", 5: "GLCompute", 6: "Kernel"}

func modelName(m uint32) string {
	if s, ok := modelNames[m]; ok {
		return s
	}
	return fmt.Sprintf("model %d", m)
}

// ResourceKind classifies a descriptor-bound variable.
type ResourceKind uint8

const (
	// ResourceStorage is a storage buffer (SPIR-V 1.0: Uniform storage
	// class with a BufferBlock struct; 1.3+: StorageBuffer class).
	ResourceStorage ResourceKind = iota
	// ResourceUniform is a uniform buffer (Uniform class, Block struct).
	ResourceUniform
	// ResourceOther is anything else bound to a descriptor (images,
	// samplers, acceleration structures).
	ResourceOther
)

func (k ResourceKind) String() string {
	switch k {
	case ResourceStorage:
		return "storage buffer"
	case ResourceUniform:
		return "uniform block"
	}
	return "non-buffer resource"
}

// SPIRVResource is a variable bound to a descriptor.
type SPIRVResource struct {
	Set, Binding uint32
	Kind         ResourceKind
	Array        bool   // an array of descriptors
	Name         string // from OpName, if the module kept debug names
	Block        string // the block's type name (OpName), if kept
	// ElemStride is the ArrayStride of the block's last member when that
	// member is an array (float x[] gives 4, vec3 v[] under std430 16): the
	// size of the element the shader indexes. 0 when the block ends in no
	// array.
	ElemStride uint32
	// ElemOffset is the Offset of that array in the block: 0 when the
	// array is the block's only member, more when other members precede
	// it (then the shader's element 0 is not the binding's first byte).
	ElemOffset uint32
	// ElemSize is the byte size of the array's element type without the
	// padding that ArrayStride adds (float x[] in a std140 uniform block:
	// 4, for an ElemStride of 16). 0 when unknown.
	ElemSize uint32
	// ReadOnly: every member of the block is NonWritable (GLSL readonly).
	ReadOnly bool
	// Written: the module stores to the buffer (OpStore, OpCopyMemory or
	// an atomic through a pointer into it). Pointers are followed through
	// access chains, OpCopyObject, OpBitcast, OpSelect, OpPhi and function
	// parameters.
	Written bool
	// Used: the module statically uses the buffer (loads, stores, atomics,
	// OpArrayLength or copies through a pointer into it, followed as for
	// Written). glslc -O removes a declaration the shader never uses, -O0
	// and -g keep it; Check ignores the unused ones, so that its verdict
	// does not depend on the optimisation level.
	Used bool
}

// Label is the resource's variable name, else its block's type name, else
// "" (modules compiled with -O keep no names).
func (r SPIRVResource) Label() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Block
}

// tag is " (shader name X)" for messages, or "".
func (r SPIRVResource) tag() string {
	if l := r.Label(); l != "" {
		return fmt.Sprintf(" (shader name %q)", l)
	}
	return ""
}

// SPIRVEntryPoint is one OpEntryPoint.
type SPIRVEntryPoint struct {
	Model uint32 // execution model, ModelGLCompute for compute
	Name  string
}

// SPIRVModule is what ParseSPIRV learns about a module.
type SPIRVModule struct {
	Version     uint32 // 0x00010000 is SPIR-V 1.0
	Generator   uint32
	Bound       uint32
	EntryPoints []SPIRVEntryPoint
	Resources   []SPIRVResource // sorted by set, then binding
	// PushConstantBytes is the byte size of the push-constant block (0
	// when there is none).
	PushConstantBytes uint32
	// PushConstantRead has bit w set when the module reads bytes 4w to
	// 4w+3 of the push-constant block (w < 64; a load through a pointer
	// whose place is not known to the reader sets the bits of every word
	// it may reach): Check requires the words of begin and end (8 and 9).
	PushConstantRead uint64
	// PushConstantReadExact has bit w set when the module reads word w
	// through a pointer that no variable index reached (pc.begin, pc.w[8],
	// a load of the whole block), not only as a possible element of an
	// array indexed with a variable (pc.params[k]).
	PushConstantReadExact uint64
	// LocalSizeXSpecID is the SpecId of the workgroup size's X component
	// (0 for layout(local_size_x_id = 0)), or -1 when it is not a
	// specialization constant.
	LocalSizeXSpecID int
	// WorkgroupSize is the WorkgroupSize built-in's (default) value, when
	// the module has one (HasWorkgroupSize). It overrides the entry
	// points' LocalSize execution modes.
	WorkgroupSize    [3]uint32
	HasWorkgroupSize bool
	// LocalSizeModes maps each entry point's name to its LocalSize
	// execution mode (GLSL layout(local_size_x = N) in;, HLSL
	// [numthreads(X, Y, Z)]), where it has one.
	LocalSizeModes map[string][3]uint32
	// PushConstantMembers are the push-constant block's members in
	// declaration order (nil when there is no block).
	PushConstantMembers []SPIRVMember
	// NeedsScalarBlockLayout: a buffer or push-constant block of the
	// module is laid out with offsets or strides that only the scalar
	// block layout allows (GL_EXT_scalar_block_layout's layout(scalar),
	// such as a vec3 array with a stride of 12), so the device must have
	// the scalarBlockLayout feature enabled (VK_EXT_scalar_block_layout).
	NeedsScalarBlockLayout bool
	// ScalarLayoutBlock names the first such block, for messages.
	ScalarLayoutBlock string
	// Capabilities are the module's OpCapability operands, in order. Some
	// (Float64, Int16, 8- and 16-bit storage...) are allowed only when the
	// device was created with a feature: package gpu refuses a module that
	// declares one its device lacks, before the module reaches the driver.
	Capabilities []uint32
	// Extensions are the module's OpExtension names (SPIR-V extensions,
	// such as SPV_KHR_storage_buffer_storage_class), each of which Vulkan
	// allows only with a device extension or feature enabled.
	Extensions []string
}

// SPIRVMember is a member of a block: its name (OpMemberName; "" when the
// module kept no names), its byte Offset and its size in bytes (0 when
// unknown). Scalar is set when it is one 32-bit integer.
type SPIRVMember struct {
	Name         string
	Offset, Size uint32
	Scalar       bool
}

// typeOperands is the minimum operand count (result id included) of the
// type instructions the reader keeps.
var typeOperands = map[uint32]int{opTypeInt: 3, opTypeFloat: 2, opTypeVector: 3, opTypeMatrix: 3,
	opTypeArray: 3, opTypeRuntimeArray: 2, opTypeStruct: 1, opTypePointer: 3}

type spvType struct {
	op   uint32
	args []uint32 // operands after the result id
}

type spvDecor struct {
	set, binding, specID, builtIn, arrayStride uint32
	hasSet, hasBinding, hasSpecID, hasBuiltIn  bool
	hasArrayStride, block, bufferBlock         bool
	nonWritable                                bool
}

type spvVar struct {
	id, typ, class uint32
}

type spvParser struct {
	types     map[uint32]spvType
	consts    map[uint32]uint32
	composite map[uint32][]uint32
	decor     map[uint32]*spvDecor
	offsets   map[[2]uint32]uint32 // (struct id, member) -> Offset
	readonly  map[uint32]int       // struct id -> members decorated NonWritable
	names     map[uint32]string
	sizes     map[uint32]uint64 // memoised type sizes
	vars      []spvVar
	// pcVar is the push-constant variable's id (0: none yet); pcPtrs
	// maps it and every pointer derived from it by access chains to the
	// byte range of the block it may point into and the pointee type.
	pcVar       uint32
	pcPtrs      map[uint32]pcPtr
	pcRead      uint64
	pcReadExact uint64
	// The pointer graph of the functions, resolved in finish: bases
	// maps an id computed from pointers (access chains, OpCopyObject,
	// OpBitcast, OpSelect, OpPhi, and function parameters through calls)
	// to the ids it was computed from; stored and accessed are the ids
	// that are stored through and that are accessed in any way (loads,
	// stores, atomics, OpArrayLength, copies).
	bases          map[uint32][]uint32
	stored         map[uint32]bool
	accessed       map[uint32]bool
	calls          []spvCall
	uses           []spvUse             // stores and accesses, by function
	pcReadIn       map[uint32][2]uint64 // function id -> its pcRead, pcReadExact
	params         map[uint32][]uint32  // function id -> its parameters
	curFunc        uint32               // the open function's id (0 outside)
	nedges         int
	memberNames    map[[2]uint32]string
	localSizeModes map[uint32][3]uint32 // function id -> LocalSize
	entryFunctions map[string]uint32    // entry point name -> function id
	alignMemo      map[layoutKey]uint32
	misalignMemo   map[layoutKey]bool
}

// spvCall is an OpFunctionCall: the callee and its arguments.
type spvCall struct {
	caller, fn uint32
	args       []uint32
}

// spvUse is a store through, or an access to, pointer id in function fn.
type spvUse struct {
	fn, id uint32
	store  bool
}

// store and access record that the open function stores through, or
// accesses, pointer id.
func (p *spvParser) store(id uint32) {
	p.stored[id] = true
	p.uses = append(p.uses, spvUse{fn: p.curFunc, id: id, store: true})
}

func (p *spvParser) access(id uint32) {
	p.accessed[id] = true
	p.uses = append(p.uses, spvUse{fn: p.curFunc, id: id})
}

// onlyEntry narrows what the parser saw to what the entry point's function
// and the functions it calls do: stores, accesses, calls and push-constant
// reads in other functions (another entry point's) are dropped. A module
// with several entry points then gives each the verdict of its own code:
// an entry point that never reads binding 0 is not said to, because
// another does. Without an entry point of that name nothing changes
// (checkEntry reports it).
func (p *spvParser) onlyEntry(entry string) {
	root, ok := p.entryFunctions[entry]
	if !ok {
		return
	}
	reach := map[uint32]bool{0: true, root: true}
	for grew := true; grew; {
		grew = false
		for _, c := range p.calls {
			if reach[c.caller] && !reach[c.fn] {
				reach[c.fn], grew = true, true
			}
		}
	}
	p.stored, p.accessed = map[uint32]bool{}, map[uint32]bool{}
	for _, u := range p.uses {
		if !reach[u.fn] {
			continue
		}
		if u.store {
			p.stored[u.id] = true
		} else {
			p.accessed[u.id] = true
		}
	}
	calls := p.calls[:0:0]
	for _, c := range p.calls {
		if reach[c.caller] {
			calls = append(calls, c)
		}
	}
	p.calls = calls
	p.pcRead, p.pcReadExact = 0, 0
	for fn, r := range p.pcReadIn {
		if reach[fn] {
			p.pcRead |= r[0]
			p.pcReadExact |= r[1]
		}
	}
}

// pcPtr is a pointer into the push-constant block: bytes [lo, hi) and the
// type it points to (0 when the reader lost track of it); inexact when a
// variable index (or a type the reader does not follow) made the range
// wider than what the pointer points to.
type pcPtr struct {
	lo, hi  uint64
	typ     uint32
	inexact bool
}

func (p *spvParser) dec(id uint32) *spvDecor {
	d := p.decor[id]
	if d == nil {
		d = &spvDecor{}
		p.decor[id] = d
	}
	return d
}

// maxSPIRVBytes bounds the modules ParseSPIRV accepts (64 MiB).
const maxSPIRVBytes = 64 << 20

// ParseSPIRV reads a SPIR-V module: its header, entry points, descriptor
// bindings and their kinds, the push-constant block's size and whether the
// workgroup size is a specialization constant. Malformed input gives an
// error, never a panic. What the module uses (SPIRVResource's Used and
// Written, PushConstantRead) is what any of its functions does; see
// ParseSPIRVEntry for one entry point's.
func ParseSPIRV(b []byte) (*SPIRVModule, error) { return ParseSPIRVEntry(b, "") }

// ParseSPIRVEntry is ParseSPIRV with what the module uses narrowed to
// what entry point entry's function, and the functions it calls, do: a
// module with several entry points shares its declarations, but each
// entry point uses its own (a pipeline runs one). An entry that the module
// lacks, or "", narrows nothing.
func ParseSPIRVEntry(b []byte, entry string) (*SPIRVModule, error) {
	if len(b) < 20 || len(b)%4 != 0 {
		return nil, fmt.Errorf("spirv: %d bytes; a module is a whole number of 32-bit words, at least 5", len(b))
	}
	if len(b) > maxSPIRVBytes {
		return nil, fmt.Errorf("spirv: %d bytes; larger than the %d accepted", len(b), maxSPIRVBytes)
	}
	words := make([]uint32, len(b)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	switch words[0] {
	case spirvMagic:
	case 0x03022307:
		return nil, errors.New("spirv: big-endian module; Vulkan wants host (little-endian) word order")
	default:
		return nil, fmt.Errorf("spirv: bad magic number %#08x, want %#08x", words[0], spirvMagic)
	}
	m := &SPIRVModule{Version: words[1], Generator: words[2], Bound: words[3], LocalSizeXSpecID: -1}
	if m.Version>>24 != 0 || m.Version&0xff != 0 || m.Version < 0x00010000 {
		return nil, fmt.Errorf("spirv: bad version word %#08x", m.Version)
	}
	if m.Bound == 0 {
		return nil, errors.New("spirv: id bound is 0")
	}
	p := &spvParser{
		types:     map[uint32]spvType{},
		consts:    map[uint32]uint32{},
		composite: map[uint32][]uint32{},
		decor:     map[uint32]*spvDecor{},
		offsets:   map[[2]uint32]uint32{},
		readonly:  map[uint32]int{},
		names:     map[uint32]string{},
		sizes:     map[uint32]uint64{},
		pcPtrs:    map[uint32]pcPtr{},
		bases:     map[uint32][]uint32{},
		stored:    map[uint32]bool{},
		accessed:  map[uint32]bool{},
		params:    map[uint32][]uint32{},
		pcReadIn:  map[uint32][2]uint64{},

		memberNames:    map[[2]uint32]string{},
		localSizeModes: map[uint32][3]uint32{},
		entryFunctions: map[string]uint32{},
		alignMemo:      map[layoutKey]uint32{},
		misalignMemo:   map[layoutKey]bool{},
	}
	// inFunc is where the open OpFunction began (0: none). A module cut
	// at an instruction boundary would otherwise pass as whole, and the
	// driver would get a function without its end.
	inFunc := 0
	for pos := 5; pos < len(words); {
		wc := int(words[pos] >> 16)
		op := words[pos] & 0xffff
		if wc == 0 {
			return nil, fmt.Errorf("spirv: word %d: instruction (opcode %d) with word count 0", pos, op)
		}
		if wc > len(words)-pos {
			return nil, fmt.Errorf("spirv: word %d: opcode %d needs %d words, only %d left", pos, op, wc, len(words)-pos)
		}
		switch op {
		case opFunction:
			if inFunc != 0 {
				return nil, fmt.Errorf("spirv: word %d: OpFunction inside the function begun at word %d", pos, inFunc)
			}
			inFunc = pos
		case opFunctionEnd:
			if inFunc == 0 {
				return nil, fmt.Errorf("spirv: word %d: OpFunctionEnd outside a function", pos)
			}
			inFunc = 0
		}
		in := words[pos+1 : pos+wc]
		if err := p.instruction(m, op, in); err != nil {
			return nil, fmt.Errorf("spirv: word %d: %w", pos, err)
		}
		pos += wc
	}
	if inFunc != 0 {
		return nil, fmt.Errorf("spirv: the function begun at word %d has no OpFunctionEnd (module truncated?)", inFunc)
	}
	if entry != "" {
		p.onlyEntry(entry)
	}
	if err := p.finish(m); err != nil {
		return nil, err
	}
	return m, nil
}

func need(op uint32, in []uint32, n int) error {
	if len(in) < n {
		return fmt.Errorf("opcode %d has %d operand words, needs at least %d", op, len(in), n)
	}
	return nil
}

// literalString decodes a nul-terminated UTF-8 literal at the start of in
// and returns it and the number of words it used.
func literalString(in []uint32) (string, int, error) {
	var sb strings.Builder
	for i, w := range in {
		for k := 0; k < 4; k++ {
			c := byte(w >> (8 * k))
			if c == 0 {
				return sb.String(), i + 1, nil
			}
			sb.WriteByte(c)
		}
	}
	return "", 0, errors.New("string literal without terminating nul")
}

func (p *spvParser) instruction(m *SPIRVModule, op uint32, in []uint32) error {
	switch op {
	case opCapability:
		if err := need(op, in, 1); err != nil {
			return err
		}
		m.Capabilities = append(m.Capabilities, in[0])
	case opExtension:
		if err := need(op, in, 1); err != nil {
			return err
		}
		s, _, err := literalString(in)
		if err != nil {
			return fmt.Errorf("OpExtension: %w", err)
		}
		m.Extensions = append(m.Extensions, s)
	case opName:
		if err := need(op, in, 2); err != nil {
			return err
		}
		s, _, err := literalString(in[1:])
		if err != nil {
			return fmt.Errorf("OpName: %w", err)
		}
		p.names[in[0]] = s
	case opMemberName:
		if err := need(op, in, 3); err != nil {
			return err
		}
		s, _, err := literalString(in[2:])
		if err != nil {
			return fmt.Errorf("OpMemberName: %w", err)
		}
		p.memberNames[[2]uint32{in[0], in[1]}] = s
	case opEntryPoint:
		if err := need(op, in, 3); err != nil {
			return err
		}
		s, _, err := literalString(in[2:])
		if err != nil {
			return fmt.Errorf("OpEntryPoint: %w", err)
		}
		m.EntryPoints = append(m.EntryPoints, SPIRVEntryPoint{Model: in[0], Name: s})
		if _, ok := p.entryFunctions[s]; !ok {
			p.entryFunctions[s] = in[1]
		}
	case opExecutionMode:
		if err := need(op, in, 2); err != nil {
			return err
		}
		if in[1] == execModeLocalSize {
			if err := need(op, in, 5); err != nil {
				return err
			}
			p.localSizeModes[in[0]] = [3]uint32{in[2], in[3], in[4]}
		}
	case opFunction:
		if err := need(op, in, 2); err != nil {
			return err
		}
		p.curFunc = in[1]
	case opFunctionEnd:
		p.curFunc = 0
	case opFunctionParameter:
		if err := need(op, in, 2); err != nil {
			return err
		}
		if p.curFunc != 0 {
			p.params[p.curFunc] = append(p.params[p.curFunc], in[1])
		}
	case opFunctionCall:
		if err := need(op, in, 3); err != nil {
			return err
		}
		p.calls = append(p.calls, spvCall{caller: p.curFunc, fn: in[2], args: in[3:]})
		p.pcUse(in[3:])
	case opLine, opNoLine, opExtInst:
		// Debug lines carry literals that may equal any id; extended
		// instructions (GLSL.std.450, debug info) take no buffer pointers
		// in a shader the contract accepts.
	case opTypeInt, opTypeFloat, opTypeVector, opTypeMatrix, opTypeArray, opTypeRuntimeArray, opTypeStruct, opTypePointer:
		if err := need(op, in, typeOperands[op]); err != nil {
			return err
		}
		p.types[in[0]] = spvType{op: op, args: in[1:]}
	case opConstant:
		if err := need(op, in, 3); err != nil {
			return err
		}
		p.consts[in[1]] = in[2]
	case opSpecConstant:
		if err := need(op, in, 3); err != nil {
			return err
		}
		p.consts[in[1]] = in[2]
	case opConstantComposite, opSpecConstantComposite:
		if err := need(op, in, 2); err != nil {
			return err
		}
		p.composite[in[1]] = in[2:]
	case opVariable:
		if err := need(op, in, 3); err != nil {
			return err
		}
		p.vars = append(p.vars, spvVar{typ: in[0], id: in[1], class: in[2]})
		if in[2] == scPushConstant && p.pcVar == 0 {
			p.pcVar = in[1]
			t, _, err := p.pointee(in[0])
			if err != nil {
				t = 0
			}
			p.pcPtrs[in[1]] = pcPtr{lo: 0, hi: 1 << 32, typ: t}
		}
	case opAccessChain, opInBoundsAccessChain, opPtrAccessChain:
		if err := need(op, in, 3); err != nil {
			return err
		}
		if base, ok := p.pcPtrs[in[2]]; ok {
			idx := in[3:]
			if op == opPtrAccessChain && len(idx) > 0 {
				idx = idx[1:] // the element operand steps over whole blocks
			}
			p.pcPtrs[in[1]] = p.pcChain(base, idx)
		}
		p.derive(in[2], in[1])
	case opCopyObject, opBitcast:
		// Result type, result, operand: the same pointer under another id.
		if err := need(op, in, 3); err != nil {
			return err
		}
		if base, ok := p.pcPtrs[in[2]]; ok {
			p.pcPtrs[in[1]] = base
		}
		p.derive(in[2], in[1])
	case opSelect:
		if err := need(op, in, 5); err != nil {
			return err
		}
		p.derive(in[3], in[1])
		p.derive(in[4], in[1])
		p.pcUse(in[3:5])
	case opPhi:
		if err := need(op, in, 2); err != nil {
			return err
		}
		for k := 2; k < len(in); k += 2 {
			p.derive(in[k], in[1])
		}
		p.pcUse(in[2:])
	case opLoad, opAtomicLoad, opArrayLength:
		// Result type, result, pointer (OpArrayLength: the block).
		if err := need(op, in, 3); err != nil {
			return err
		}
		p.access(in[2])
		p.pcUse(in[2:3])
	case opStore, opAtomicStore:
		// The target pointer is the first operand; OpStore's second is
		// the value stored.
		if err := need(op, in, 2); err != nil {
			return err
		}
		p.store(in[0])
		if op == opStore {
			p.pcUse(in[1:2])
		}
	case opCopyMemory, opCopyMemorySized:
		if err := need(op, in, 2); err != nil {
			return err
		}
		p.store(in[0])
		p.access(in[1])
		p.pcUse(in[1:2])
	case opDecorate:
		if err := need(op, in, 2); err != nil {
			return err
		}
		d := p.dec(in[0])
		arg := func() (uint32, error) {
			if len(in) < 3 {
				return 0, fmt.Errorf("OpDecorate %d misses its literal", in[1])
			}
			return in[2], nil
		}
		var err error
		switch in[1] {
		case decBlock:
			d.block = true
		case decBufferBlock:
			d.bufferBlock = true
		case decNonWritable:
			d.nonWritable = true
		case decSpecID:
			d.specID, err = arg()
			d.hasSpecID = err == nil
		case decBuiltIn:
			d.builtIn, err = arg()
			d.hasBuiltIn = err == nil
		case decArrayStride:
			d.arrayStride, err = arg()
			d.hasArrayStride = err == nil
		case decBinding:
			d.binding, err = arg()
			d.hasBinding = err == nil
		case decDescriptorSet:
			d.set, err = arg()
			d.hasSet = err == nil
		}
		return err
	case opMemberDecorate:
		if err := need(op, in, 3); err != nil {
			return err
		}
		if in[2] == decNonWritable {
			p.readonly[in[0]]++
		}
		if in[2] == decOffset {
			if err := need(op, in, 4); err != nil {
				return err
			}
			p.offsets[[2]uint32{in[0], in[1]}] = in[3]
		}
	default:
		if (op >= opAtomicFirstRMW && op <= opAtomicLastRMW || op == opAtomicFMinEXT || op == opAtomicFMaxEXT || op == opAtomicFAddEXT) && len(in) > 2 {
			// Result type, result, pointer, ...: read-modify-write.
			p.store(in[2])
			p.access(in[2])
		}
		// Any other use of a pointer into the push-constant block inside
		// a function reads the bytes it may reach.
		if p.curFunc != 0 {
			p.pcUse(in)
		}
	}
	return nil
}

// maxPointerEdges bounds the pointer graph (bases) of one module.
const maxPointerEdges = 1 << 22

// derive records that id to is computed from pointer from.
func (p *spvParser) derive(from, to uint32) {
	if p.nedges >= maxPointerEdges || from == to {
		return
	}
	p.nedges++
	p.bases[to] = append(p.bases[to], from)
}

// pcUse marks the push-constant bytes that the pointers among operands
// may reach as read.
func (p *spvParser) pcUse(operands []uint32) {
	if len(p.pcPtrs) == 0 {
		return
	}
	for _, w := range operands {
		if r, ok := p.pcPtrs[w]; ok {
			p.pcMark(r)
		}
	}
}

// pcChain follows an access chain's indexes from base through the
// push-constant block's types (struct members by their Offset, array
// elements by their ArrayStride, vector and matrix components by their
// size). An index that is not a constant, or a type the reader does not
// follow, leaves the whole of the current place as the range.
func (p *spvParser) pcChain(base pcPtr, idx []uint32) pcPtr {
	r := base
	if r.typ == 0 {
		r.inexact = true
		return r
	}
	if r.hi == 1<<32 { // the variable itself: its block's size
		if n, err := p.size(r.typ, 0); err == nil {
			r.hi = r.lo + n
		}
	}
	for _, ix := range idx {
		t, ok := p.types[r.typ]
		if !ok {
			return pcPtr{lo: r.lo, hi: r.hi, inexact: true}
		}
		c, isConst := p.consts[ix]
		switch t.op {
		case opTypeStruct:
			if !isConst || int(c) >= len(t.args) {
				return pcPtr{lo: r.lo, hi: r.hi, inexact: true}
			}
			off, ok := p.offsets[[2]uint32{r.typ, c}]
			if !ok {
				return pcPtr{lo: r.lo, hi: r.hi, inexact: true}
			}
			mt := t.args[c]
			n, err := p.size(mt, 0)
			if err != nil {
				return pcPtr{lo: r.lo + uint64(off), hi: r.hi, inexact: true}
			}
			r = pcPtr{lo: r.lo + uint64(off), hi: r.lo + uint64(off) + n, typ: mt, inexact: r.inexact}
		case opTypeArray, opTypeRuntimeArray, opTypeVector, opTypeMatrix:
			et := t.args[0]
			var stride uint64
			if d := p.decor[r.typ]; d != nil && d.hasArrayStride {
				stride = uint64(d.arrayStride)
			} else if n, err := p.size(et, 0); err == nil {
				stride = n
			}
			if !isConst || stride == 0 {
				return pcPtr{lo: r.lo, hi: r.hi, inexact: true}
			}
			lo := r.lo + uint64(c)*stride
			n, err := p.size(et, 0)
			if err != nil || lo+n > r.hi {
				return pcPtr{lo: r.lo, hi: r.hi, inexact: true}
			}
			r = pcPtr{lo: lo, hi: lo + n, typ: et, inexact: r.inexact}
		default:
			return pcPtr{lo: r.lo, hi: r.hi, inexact: true}
		}
	}
	return r
}

// pcMark records the words of r as read.
func (p *spvParser) pcMark(r pcPtr) {
	for w := r.lo / 4; w < 64 && 4*w < r.hi; w++ {
		p.pcRead |= 1 << w
		in := p.pcReadIn[p.curFunc]
		in[0] |= 1 << w
		if !r.inexact && r.typ != 0 {
			p.pcReadExact |= 1 << w
			in[1] |= 1 << w
		}
		p.pcReadIn[p.curFunc] = in
	}
}

// maxTypeDepth bounds type nesting, which also stops cyclic (malformed)
// type graphs.
const maxTypeDepth = 32

// size returns the byte size of type id under explicit layout decorations.
// Sizes are memoised, so a type graph that shares subtypes costs time linear
// in its size (not exponential in its depth).
func (p *spvParser) size(id uint32, depth int) (uint64, error) {
	if depth > maxTypeDepth {
		return 0, fmt.Errorf("type %d: nested deeper than %d (cyclic?)", id, maxTypeDepth)
	}
	if n, ok := p.sizes[id]; ok {
		return n, nil
	}
	n, err := p.computeSize(id, depth)
	if err == nil {
		p.sizes[id] = n
	}
	return n, err
}

func (p *spvParser) computeSize(id uint32, depth int) (uint64, error) {
	t, ok := p.types[id]
	if !ok {
		return 0, fmt.Errorf("type %d is not a supported type", id)
	}
	const limit = 1 << 32
	var n uint64
	switch t.op {
	case opTypeInt, opTypeFloat:
		n = uint64(t.args[0]) / 8
	case opTypeVector, opTypeMatrix:
		e, err := p.size(t.args[0], depth+1)
		if err != nil {
			return 0, err
		}
		n = e * uint64(t.args[1])
	case opTypeArray:
		length, ok := p.consts[t.args[1]]
		if !ok {
			return 0, fmt.Errorf("array type %d: length %d is not a constant", id, t.args[1])
		}
		stride := uint64(0)
		if d := p.decor[id]; d != nil && d.hasArrayStride {
			stride = uint64(d.arrayStride)
		} else {
			e, err := p.size(t.args[0], depth+1)
			if err != nil {
				return 0, err
			}
			stride = e
		}
		n = stride * uint64(length)
	case opTypeStruct:
		for i, mt := range t.args {
			off, ok := p.offsets[[2]uint32{id, uint32(i)}]
			if !ok {
				return 0, fmt.Errorf("struct %d member %d has no Offset", id, i)
			}
			e, err := p.size(mt, depth+1)
			if err != nil {
				return 0, err
			}
			n = max(n, uint64(off)+e)
		}
	default:
		return 0, fmt.Errorf("type %d (opcode %d) has no fixed size", id, t.op)
	}
	if n > limit {
		return 0, fmt.Errorf("type %d: %d bytes", id, n)
	}
	return n, nil
}

// pointee returns the type a pointer type points to, and its storage class.
func (p *spvParser) pointee(ptr uint32) (uint32, uint32, error) {
	t, ok := p.types[ptr]
	if !ok || t.op != opTypePointer {
		return 0, 0, fmt.Errorf("variable type %d is not a pointer type", ptr)
	}
	return t.args[1], t.args[0], nil
}

func (p *spvParser) finish(m *SPIRVModule) error {
	for name, fn := range p.entryFunctions {
		if ls, ok := p.localSizeModes[fn]; ok {
			if m.LocalSizeModes == nil {
				m.LocalSizeModes = map[string][3]uint32{}
			}
			m.LocalSizeModes[name] = ls
		}
	}
	// Arguments flow into the callee's parameters.
	for _, c := range p.calls {
		params := p.params[c.fn]
		for k, a := range c.args {
			if k < len(params) {
				p.derive(a, params[k])
			} else {
				p.accessed[a] = true
			}
		}
	}
	// The ids from which a store, or any access, is reached.
	written := p.reaching(p.stored, nil)
	used := p.reaching(p.accessed, written)
	pushSeen := false
	for _, v := range p.vars {
		switch v.class {
		case scPushConstant:
			if pushSeen {
				return errors.New("spirv: more than one push-constant block")
			}
			pushSeen = true
			t, _, err := p.pointee(v.typ)
			if err != nil {
				return fmt.Errorf("spirv: push constants: %w", err)
			}
			n, err := p.size(t, 0)
			if err != nil {
				return fmt.Errorf("spirv: push constants: %w", err)
			}
			m.PushConstantBytes = uint32(n)
			m.PushConstantRead = p.pcRead
			m.PushConstantReadExact = p.pcReadExact
			if tt, ok := p.types[t]; ok && tt.op == opTypeStruct {
				for i, mt := range tt.args {
					mem := SPIRVMember{Name: p.memberNames[[2]uint32{t, uint32(i)}], Offset: p.offsets[[2]uint32{t, uint32(i)}]}
					if n, err := p.size(mt, 0); err == nil {
						mem.Size = uint32(n)
					}
					if it, ok := p.types[mt]; ok && it.op == opTypeInt && it.args[0] == 32 {
						mem.Scalar = true
					}
					m.PushConstantMembers = append(m.PushConstantMembers, mem)
				}
			}
			p.scalarLayout(m, t, false, p.names[t])
		case scUniform, scStorageBuffer, scUniformConstant:
			d := p.decor[v.id]
			if d == nil || !d.hasSet || !d.hasBinding {
				return fmt.Errorf("spirv: resource variable %d %q lacks DescriptorSet or Binding", v.id, p.names[v.id])
			}
			r := SPIRVResource{Set: d.set, Binding: d.binding, Kind: ResourceOther, Name: p.names[v.id]}
			r.Used, r.Written = used[v.id], written[v.id]
			t, _, err := p.pointee(v.typ)
			if err != nil {
				return fmt.Errorf("spirv: resource %d: %w", v.id, err)
			}
			if tt, ok := p.types[t]; ok && (tt.op == opTypeArray || tt.op == opTypeRuntimeArray) {
				r.Array = true
				t = tt.args[0]
			}
			if tt, ok := p.types[t]; ok && tt.op == opTypeStruct {
				r.Block = p.names[t]
				r.ReadOnly = (d.nonWritable || p.readonly[t] >= len(tt.args)) && len(tt.args) > 0
				if n := len(tt.args); n > 0 {
					if at, ok := p.types[tt.args[n-1]]; ok && (at.op == opTypeArray || at.op == opTypeRuntimeArray) {
						if ad := p.decor[tt.args[n-1]]; ad != nil && ad.hasArrayStride {
							r.ElemStride = ad.arrayStride
						}
						r.ElemOffset = p.offsets[[2]uint32{t, uint32(n - 1)}]
						if es, err := p.size(at.args[0], 0); err == nil {
							r.ElemSize = uint32(es)
						}
					}
				}
				sd := p.decor[t]
				switch {
				case sd == nil:
				case v.class == scStorageBuffer && sd.block:
					r.Kind = ResourceStorage
				case v.class == scUniform && sd.bufferBlock:
					r.Kind = ResourceStorage
				case v.class == scUniform && sd.block:
					r.Kind = ResourceUniform
				}
				if r.Kind != ResourceOther {
					p.scalarLayout(m, t, r.Kind == ResourceUniform, r.Label())
				}
			}
			m.Resources = append(m.Resources, r)
		}
	}
	sort.Slice(m.Resources, func(i, j int) bool {
		a, b := m.Resources[i], m.Resources[j]
		if a.Set != b.Set {
			return a.Set < b.Set
		}
		return a.Binding < b.Binding
	})
	wgSeen := false
	for id, d := range p.decor {
		if !d.hasBuiltIn || d.builtIn != builtInWorkgroupSize {
			continue
		}
		if wgSeen {
			return errors.New("spirv: more than one WorkgroupSize built-in")
		}
		wgSeen = true
		c := p.composite[id]
		if len(c) == 0 {
			return fmt.Errorf("spirv: WorkgroupSize %d is not a constant composite", id)
		}
		if xd := p.decor[c[0]]; xd != nil && xd.hasSpecID {
			m.LocalSizeXSpecID = int(xd.specID)
		}
		if len(c) == 3 {
			m.HasWorkgroupSize = true
			for i := range 3 {
				m.WorkgroupSize[i] = p.consts[c[i]]
			}
		}
	}
	return nil
}

// reaching returns the ids from which the pointer graph leads to one of
// from's (or is one of them), with those of also added: a variable is
// written when a stored pointer derives from it. Linear in the graph.
func (p *spvParser) reaching(from, also map[uint32]bool) map[uint32]bool {
	seen := make(map[uint32]bool, len(from)+len(also))
	var stack []uint32
	for _, m := range []map[uint32]bool{from, also} {
		for id := range m {
			if !seen[id] {
				seen[id] = true
				stack = append(stack, id)
			}
		}
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, b := range p.bases[id] {
			if !seen[b] {
				seen[b] = true
				stack = append(stack, b)
			}
		}
	}
	return seen
}

// scalarLayout sets m.NeedsScalarBlockLayout when the block struct t (or a
// struct nested in it) has a member whose Offset, or an array whose
// ArrayStride, is not a multiple of the alignment the standard layout
// gives it: std140's for uniform blocks, std430's for storage and
// push-constant blocks (Vulkan specification, "Offset and Stride
// Assignment"). Only the scalar block layout allows that.
func (p *spvParser) scalarLayout(m *SPIRVModule, t uint32, std140 bool, name string) {
	if m.NeedsScalarBlockLayout {
		return
	}
	if p.misaligned(t, std140, 0) {
		m.NeedsScalarBlockLayout = true
		m.ScalarLayoutBlock = name
	}
}

// misaligned reports whether type t, or a type in it, breaks the standard
// layout's alignment rules (see scalarLayout).
func (p *spvParser) misaligned(t uint32, std140 bool, depth int) bool {
	key := layoutKey{t, std140}
	if r, ok := p.misalignMemo[key]; ok {
		return r
	}
	r := p.computeMisaligned(t, std140, depth)
	p.misalignMemo[key] = r
	return r
}

// layoutKey memoises align and misaligned (shared subtypes would cost
// time exponential in the nesting depth otherwise).
type layoutKey struct {
	t      uint32
	std140 bool
}

func (p *spvParser) computeMisaligned(t uint32, std140 bool, depth int) bool {
	tt, ok := p.types[t]
	if !ok || depth > maxTypeDepth {
		return false
	}
	switch tt.op {
	case opTypeStruct:
		for i, mt := range tt.args {
			if off, ok := p.offsets[[2]uint32{t, uint32(i)}]; ok {
				if a := p.align(mt, std140, depth+1); a > 1 && off%a != 0 {
					return true
				}
			}
			if p.misaligned(mt, std140, depth+1) {
				return true
			}
		}
	case opTypeArray, opTypeRuntimeArray:
		if d := p.decor[t]; d != nil && d.hasArrayStride {
			if a := p.align(t, std140, depth+1); a > 1 && d.arrayStride%a != 0 {
				return true
			}
		}
		return p.misaligned(tt.args[0], std140, depth+1)
	}
	return false
}

// align is the base alignment of type t under std430, or std140's
// extended alignment (arrays and structs rounded up to 16), in bytes; 1
// when unknown.
func (p *spvParser) align(t uint32, std140 bool, depth int) uint32 {
	key := layoutKey{t, std140}
	if a, ok := p.alignMemo[key]; ok {
		return a
	}
	a := p.computeAlign(t, std140, depth)
	p.alignMemo[key] = a
	return a
}

func (p *spvParser) computeAlign(t uint32, std140 bool, depth int) uint32 {
	tt, ok := p.types[t]
	if !ok || depth > maxTypeDepth {
		return 1
	}
	round := func(a uint32) uint32 {
		if std140 {
			return max(a, 16)
		}
		return a
	}
	switch tt.op {
	case opTypeInt, opTypeFloat:
		return max(tt.args[0]/8, 1)
	case opTypeVector:
		c := p.align(tt.args[0], std140, depth+1)
		if tt.args[1] == 2 {
			return 2 * c
		}
		return 4 * c
	case opTypeMatrix:
		// Column-major: an array of column vectors.
		return round(p.align(tt.args[0], std140, depth+1))
	case opTypeArray, opTypeRuntimeArray:
		return round(p.align(tt.args[0], std140, depth+1))
	case opTypeStruct:
		a := uint32(1)
		for _, mt := range tt.args {
			a = max(a, p.align(mt, std140, depth+1))
		}
		return round(a)
	}
	return 1
}
