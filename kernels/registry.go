package kernels

import (
	"fmt"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/shaders"
)

// Kernel IDs of this package: fixed IDs (below sched.FirstHandedID, which
// the registry never hands out), so that tasks, tables and programs name
// the kernels as constants. Other libraries sharing the registry take IDs
// it hands out (sched.Registry.RegisterNext, RegisterBlock) and never meet
// these, in whatever order they register. Stream layouts and parameters
// are listed in doc.go.
const (
	SkinLBS          sched.KernelID = iota + 1 // linear blend skinning, storage palette
	SkinLBSUniform                             // linear blend skinning, uniform palette (<= 1024 bones)
	SkinDQS                                    // dual-quaternion skinning, storage palette
	SkinDQSUniform                             // dual-quaternion skinning, uniform palette (<= 2048 bones)
	LocalToModel                               // parent-relative transforms to model matrices
	LocalToModelSkin                           // ... and model * inverse bind (skinning palette)
	SumF32                                     // Reduce 256:1, float32 block sums
	MinMaxF32                                  // Reduce 256:1, float32 block min and max
	Avg32F32                                   // Reduce 32:1, float32 block averages
	ExpandLerp                                 // Expand 1:8, segment to 8 interpolated samples
	ScanReduceU32                              // Reduce 256:1, uint32 block totals (scan pass 1)
	ScanDownsweepU32                           // Expand 1:256, uint32 exclusive scan from block offsets
	CRC32CBlocks                               // Reduce 1024 words:1, CRC-32C per 4 KiB block
	Saxpy                                      // Streaming, out = a*x + y
	lastID
)

// The package's IDs stay fixed, below the handed-out range: this
// constant overflows (a compile error) otherwise.
const _ = sched.FirstHandedID - lastID

// IDs returns every kernel ID of this package, in order.
func IDs() []sched.KernelID {
	ids := make([]sched.KernelID, 0, lastID-1)
	for id := SkinLBS; id < lastID; id++ {
		ids = append(ids, id)
	}
	return ids
}

// def is a kernel of this package: its shader has the kernel's name.
type def struct {
	kernel    sched.Kernel
	uniformIn [4]bool
}

// spec declares a stream; stride 0 accepts any (checked by the CPU code).
func spec(name string, stride uint32, r sched.Rate) sched.StreamSpec {
	return sched.StreamSpec{Name: name, Stride: stride, Rate: r}
}

func skinIn(palStride uint32) []sched.StreamSpec {
	return []sched.StreamSpec{spec("vertices", 48, sched.Whole), spec("palette", palStride, sched.Whole)}
}

var skinOut = []sched.StreamSpec{spec("skinned", 24, sched.PerItem)}

// defs lists the kernels; Definition fills in their GPU bindings.
var defs = [lastID]def{
	SkinLBS: {kernel: sched.Kernel{Name: "skin_lbs", Kind: sched.Streaming, Grain: 2048,
		In: skinIn(64), Out: skinOut, CPU: skinLBS(0)}},
	SkinLBSUniform: {kernel: sched.Kernel{Name: "skin_lbs_uniform", Kind: sched.Streaming, Grain: 2048,
		In: skinIn(64), Out: skinOut, CPU: skinLBS(UniformLBSBones)}, uniformIn: [4]bool{1: true}},
	SkinDQS: {kernel: sched.Kernel{Name: "skin_dqs", Kind: sched.Streaming, Grain: 2048,
		In: skinIn(32), Out: skinOut, CPU: skinDQS(0)}},
	SkinDQSUniform: {kernel: sched.Kernel{Name: "skin_dqs_uniform", Kind: sched.Streaming, Grain: 2048,
		In: skinIn(32), Out: skinOut, CPU: skinDQS(UniformDQSBones)}, uniformIn: [4]bool{1: true}},
	LocalToModel: {kernel: sched.Kernel{Name: "local_to_model", Kind: sched.Streaming, Grain: 8,
		In:  []sched.StreamSpec{spec("local", 0, sched.PerItem), spec("parents", 4, sched.Whole)},
		Out: []sched.StreamSpec{spec("model", 0, sched.PerItem)}, CPU: localToModel(false)}},
	LocalToModelSkin: {kernel: sched.Kernel{Name: "local_to_model_skin", Kind: sched.Streaming, Grain: 8,
		In:  []sched.StreamSpec{spec("local", 0, sched.PerItem), spec("parents", 4, sched.Whole), spec("inverse_bind", 64, sched.Whole)},
		Out: []sched.StreamSpec{spec("model", 0, sched.PerItem), spec("skin", 0, sched.PerItem)}, CPU: localToModel(true)}},
	SumF32: {kernel: sched.Kernel{Name: "reduce_sum", Kind: sched.Reduce, Factor: SumFactor, Grain: 64,
		In: []sched.StreamSpec{spec("x", 4, sched.PerItem)}, Out: []sched.StreamSpec{spec("sums", 4, sched.PerItem)}, CPU: sumF32}},
	MinMaxF32: {kernel: sched.Kernel{Name: "reduce_minmax", Kind: sched.Reduce, Factor: SumFactor, Grain: 64,
		In: []sched.StreamSpec{spec("x", 4, sched.PerItem)}, Out: []sched.StreamSpec{spec("minmax", 8, sched.PerItem)}, CPU: minMaxF32}},
	Avg32F32: {kernel: sched.Kernel{Name: "reduce_avg32", Kind: sched.Reduce, Factor: Avg32Factor, Grain: 512,
		In: []sched.StreamSpec{spec("x", 4, sched.PerItem)}, Out: []sched.StreamSpec{spec("avg", 4, sched.PerItem)}, CPU: avg32F32}},
	ExpandLerp: {kernel: sched.Kernel{Name: "expand_lerp", Kind: sched.Expand, Factor: ExpandFactor, Grain: 2048,
		In: []sched.StreamSpec{spec("segments", 8, sched.PerItem)}, Out: []sched.StreamSpec{spec("samples", 4, sched.PerItem)}, CPU: expandLerp}},
	ScanReduceU32: {kernel: sched.Kernel{Name: "scan_reduce", Kind: sched.Reduce, Factor: ScanBlock, Grain: 64,
		In: []sched.StreamSpec{spec("values", 4, sched.PerItem)}, Out: []sched.StreamSpec{spec("totals", 4, sched.PerItem)}, CPU: scanReduceU32}},
	ScanDownsweepU32: {kernel: sched.Kernel{Name: "scan_downsweep", Kind: sched.Expand, Factor: ScanBlock, Grain: 64,
		In:  []sched.StreamSpec{spec("offsets", 4, sched.PerItem), spec("values", 4, sched.Whole)},
		Out: []sched.StreamSpec{spec("scan", 4, sched.PerItem)}, CPU: scanDownsweepU32}},
	CRC32CBlocks: {kernel: sched.Kernel{Name: "crc32c_blocks", Kind: sched.Reduce, Factor: CRCBlockWords, Grain: 16,
		In: []sched.StreamSpec{spec("data", 4, sched.PerItem)}, Out: []sched.StreamSpec{spec("crc", 4, sched.PerItem)}, CPU: crc32cBlocks}},
	Saxpy: {kernel: sched.Kernel{Name: "saxpy", Kind: sched.Streaming, Grain: 16384,
		In:  []sched.StreamSpec{spec("x", 4, sched.PerItem), spec("y", 4, sched.PerItem)},
		Out: []sched.StreamSpec{spec("out", 4, sched.PerItem)}, CPU: saxpy}},
}

// Definition returns kernel id's registration: its declaration, CPU
// function and GPU binding (a *bind.Binding over the embedded SPIR-V of the
// shader named like the kernel), checked with Check. The stream slices are
// fresh copies.
func Definition(id sched.KernelID) (sched.Kernel, error) {
	if id < SkinLBS || id >= lastID {
		return sched.Kernel{}, fmt.Errorf("kernels: kernel ID %d is not one of this package's (%d-%d): %w", id, SkinLBS, lastID-1, sched.ErrUnknownKernel)
	}
	d := defs[id]
	k := d.kernel
	// Every kernel refuses outputs overlapping inputs; Saxpy, element by
	// element, also runs in place (out = x or y).
	k.CPU = noAliasing(k.CPU, id == Saxpy)
	k.In = append([]sched.StreamSpec(nil), k.In...)
	k.Out = append([]sched.StreamSpec(nil), k.Out...)
	spv, err := shaders.SPIRV(k.Name)
	if err != nil {
		return sched.Kernel{}, fmt.Errorf("kernels: kernel %d %q: %w", id, k.Name, err)
	}
	k.GPU = &bind.Binding{SPIRV: spv, Entry: "main", LocalSize: 64, ItemsPerInvocation: 1, UniformIn: d.uniformIn}
	if err := Check(&k); err != nil {
		return sched.Kernel{}, err
	}
	return k, nil
}

// Register registers every kernel of this package in reg under its ID,
// after checking each kernel's SPIR-V against its declared streams (see
// Check). It registers nothing and fails if any check fails or any of the
// IDs is already taken.
func Register(reg *sched.Registry) error {
	ks := make([]sched.Kernel, 0, lastID)
	for id := SkinLBS; id < lastID; id++ {
		k, err := Definition(id)
		if err != nil {
			return err
		}
		if old := reg.Lookup(id); old != nil {
			return fmt.Errorf("kernels: Register: ID %d (%q) is already taken by %q", id, k.Name, old.Name)
		}
		ks = append(ks, k)
	}
	for i, k := range ks {
		if err := reg.Register(SkinLBS+sched.KernelID(i), k); err != nil {
			return fmt.Errorf("kernels: Register: %w", err)
		}
	}
	return nil
}
