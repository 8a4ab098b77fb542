package anim

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/shaders"
)

// The sampling kernel: SampleJob as a registered sched kernel with a CPU
// implementation (SampleJob.RunRange) and a GPU one (shaders/anim_sample.comp,
// a line-by-line GLSL port of sampleOne that decodes the same blob words).
// The shader handles both clip codecs, per character by the clip's header
// flags: curve clips (cursor-driven) and uniform clips (CodecUniform:
// frame-addressable, the cursor neither read nor written, but copied from
// input 2 to output 1 like any other without SampleInPlace), so one dispatch
// may mix them. See doc.go, "Sampling on the GPU", for the layouts, the
// cursors and the measured figures.

// SampleKernelName is the kernel's name, also its shader's in package shaders.
const SampleKernelName = "anim_sample"

// Flags of the sampling kernel, in TaskData.Params[2].
const (
	// SampleInPlace tells the GPU shader that output stream 1 (cursors
	// written) is the memory of input stream 2 (cursors read): one
	// GPU-resident buffer given as both, at the same offset. The shader then
	// updates the cursors where they are and copies nothing, so they live
	// on the device from frame to frame. Without it, the shader first
	// copies each character's cursor from input 2 to output 1 (host
	// cursors: uploaded, copied, read back), for characters on uniform
	// clips too (whose sampling does not use the cursor). Set it only when the two
	// streams are the same device memory: otherwise the shader takes
	// output 1's undefined bytes for the cursors (no crash or hang, but the
	// pose is right only if they happen to hold a valid cursor or one that
	// does not match the clip). The CPU implementation ignores the flag: it
	// compares the host slices itself.
	SampleInPlace uint32 = 1 << 0
)

// SampleGrain is the kernel's default split grain in characters: 16
// characters of a few dozen bones are enough CPU work per range, when
// playing forward, that a split costs little beside it (measured figures:
// BENCHMARKS.md, section "anim").
const SampleGrain = 16

// SampleLocalSize is the shader's workgroup size (one character per
// invocation): small groups keep both of lavapipe's threads busy even for
// a small crowd (64 characters: groups of 16 ran faster than one group of
// 64; at 1024 characters 8 to 64 are alike; BenchmarkSampleGPU).
const SampleLocalSize = 16

var sampleSPIRV = sync.OnceValues(func() ([]byte, error) { return shaders.SPIRV(SampleKernelName) })

// SampleKernel returns the sampling kernel's registration, for a registry
// that wants it under an ID of its own choosing (RegisterSampleKernel
// takes one the registry hands out):
//
//	Streaming, work item = character, grain SampleGrain
//	in 0   blob     uint32 words (4 B)          Whole    Blob.Words(); TaskData.Data = the *Blob
//	in 1   inputs   SampleInput (8 B)           PerItem  clip offset, time
//	in 2   cursors  Params[1] uint32 words      PerItem  read
//	out 0  poses    Params[0] bones x 48 B      PerItem  kernels.Transform per bone (PoseFloats)
//	out 1  cursors  Params[1] uint32 words      PerItem  written (usually in 2's memory)
//	Params[0] bones per pose (SampleJob.Bones), Params[1] cursor words per
//	character (SampleJob.CursorStride), Params[2] flags (SampleInPlace)
//
// The GPU binding holds shaders/anim_sample.spv (LocalSize SampleLocalSize).
// Its Admit refuses, on a device with a loop budget (lavapipe:
// gpu.Device.LoopBudget), a task whose blob's clips could need more loop
// passes per invocation than the budget, which the device would sample
// wrong without any error (doc.go, "Loop budget"; gpu_bound.go): the task
// fails with gpu.ErrRefused and an error naming the clip.
func SampleKernel() (sched.Kernel, error) {
	spv, err := sampleSPIRV()
	if err != nil {
		return sched.Kernel{}, fmt.Errorf("anim: sampling kernel: %w", err)
	}
	b := &bind.Binding{SPIRV: spv, Entry: bind.DefaultEntry, LocalSize: SampleLocalSize, ItemsPerInvocation: 1, Admit: sampleAdmit}
	if err := b.Validate(); err != nil {
		return sched.Kernel{}, fmt.Errorf("anim: sampling kernel: %w", err)
	}
	return sched.Kernel{
		Name:  SampleKernelName,
		Kind:  sched.Streaming,
		Grain: SampleGrain,
		In: []sched.StreamSpec{
			{Name: "blob", Stride: 4, Rate: sched.Whole},
			{Name: "inputs", Stride: 8, Rate: sched.PerItem},
			{Name: "cursors", Rate: sched.PerItem},
		},
		Out: []sched.StreamSpec{
			{Name: "poses", Rate: sched.PerItem},
			{Name: "cursors_out", Rate: sched.PerItem},
		},
		CPU: sampleKernelCPU,
		GPU: b,
	}, nil
}

// RegisterSampleKernel registers the sampling kernel in reg under an ID
// the registry hands out (sched.Registry.RegisterBlock, owner "anim") and
// returns it: tasks name the kernel by that ID. The sampler has no fixed
// ID, so it never collides with another library's kernels, whichever
// registers first. A second call on the same registry registers nothing
// and returns the same ID.
func RegisterSampleKernel(reg *sched.Registry) (sched.KernelID, error) {
	k, err := SampleKernel()
	if err != nil {
		return 0, err
	}
	id, err := reg.RegisterBlock("anim", []sched.Kernel{k})
	if err != nil {
		return 0, fmt.Errorf("anim: RegisterSampleKernel: %w", err)
	}
	return id, nil
}

// TaskData returns the data of a sampling-kernel task that does the job on
// its host slices: the blob's bytes as input 0 (and the *Blob as Data),
// Inputs, Cursors as input 2 and output 1 (the same slice), Poses as
// output 0, Params {Bones, CursorStride, flags}. To keep
// cursors (or the blob, or the poses) on the GPU, replace those streams by
// GPU buffers' streams (and add SampleInPlace when one buffer is both
// cursor streams): a host blob is uploaded whole for every GPU dispatch,
// host cursors both ways. It validates the job first, and refuses flags
// other than SampleInPlace, Bones above MaxBones and CursorStride above
// what MaxBones bones' tracks need (the kernel would fail the task on
// them).
func (j *SampleJob) TaskData(flags uint32) (sched.TaskData, error) {
	if flags&^SampleInPlace != 0 {
		return sched.TaskData{}, fmt.Errorf("anim: SampleJob.TaskData: unknown flags %#x (only SampleInPlace)", flags)
	}
	if err := j.Validate(); err != nil {
		return sched.TaskData{}, err
	}
	// The kernel's bounds on Params (sampleKernelCPU): larger strides would
	// be truncated to uint32 here and refused by the kernel anyway.
	if j.Bones > MaxBones || j.CursorStride > CursorHeaderWords+3*MaxBones*CursorSlotWords {
		return sched.TaskData{}, fmt.Errorf("anim: SampleJob.TaskData: Bones %d (at most %d), CursorStride %d (at most %d): beyond the sampling kernel's limits", j.Bones, MaxBones, j.CursorStride, CursorHeaderWords+3*MaxBones*CursorSlotWords)
	}
	n := len(j.Inputs)
	var d sched.TaskData
	d.Params[0], d.Params[1], d.Params[2] = uint32(j.Bones), uint32(j.CursorStride), flags
	d.Data = j.Blob
	d.Elements = uint32(n)
	d.In[0] = sched.Stream{Bytes: j.Blob.data, Stride: 4, Count: uint32(len(j.Blob.words))}
	d.In[1] = sched.StreamOf(j.Inputs)
	cur := sched.StreamOf(j.Cursors[:n*j.CursorStride])
	cur.Stride, cur.Count = uint32(4*j.CursorStride), uint32(n)
	d.In[2], d.Out[1] = cur, cur
	pose := sched.StreamOf(j.Poses[:n*j.Bones*PoseFloats])
	pose.Stride, pose.Count = uint32(4*PoseFloats*j.Bones), uint32(n)
	d.Out[0] = pose
	return d, nil
}

var errSampleData = errors.New("anim: sampling kernel: TaskData.Data must be the *anim.Blob whose bytes input stream 0 holds")

// sampleKernelCPU is the kernel's CPU implementation: SampleJob.RunRange on
// the task's streams. It allocates nothing unless it fails.
func sampleKernelCPU(_ *sched.Ctx, d *sched.TaskData) error {
	bl, _ := d.Data.(*Blob)
	if bl == nil {
		return errSampleData
	}
	// Input 0 may be device-only (the blob uploaded once); host bytes must
	// be the blob's own, so that both devices read the same words.
	if b := d.In[0].Bytes; b != nil && (len(b) != len(bl.data) || len(b) == 0 || unsafe.SliceData(b) != unsafe.SliceData(bl.data)) {
		return errSampleData
	}
	bones, stride, flags := d.Params[0], d.Params[1], d.Params[2]
	if bones == 0 || bones > MaxBones || stride < CursorHeaderWords || stride > CursorHeaderWords+3*MaxBones*CursorSlotWords {
		return fmt.Errorf("anim: sampling kernel: Params[0] bones %d, Params[1] cursor words %d", bones, stride)
	}
	if flags&^SampleInPlace != 0 {
		return fmt.Errorf("anim: sampling kernel: unknown flags %#x in Params[2]", flags)
	}
	inputs, err := hostView[SampleInput](&d.In[1], "input", 1, 1)
	if err != nil {
		return err
	}
	cin, err := hostView[uint32](&d.In[2], "input", 2, stride)
	if err != nil {
		return err
	}
	cout, err := hostView[uint32](&d.Out[1], "output", 1, stride)
	if err != nil {
		return err
	}
	poses, err := hostView[float32](&d.Out[0], "output", 0, PoseFloats*bones)
	if err != nil {
		return err
	}
	lo, hi := int(d.Begin)*int(stride), int(d.End)*int(stride)
	if hi > len(cin) || hi > len(cout) {
		return fmt.Errorf("anim: sampling kernel: range [%d,%d) beyond the cursor streams", d.Begin, d.End)
	}
	if hi > lo && &cin[lo] != &cout[lo] {
		copy(cout[lo:hi], cin[lo:hi])
	}
	job := SampleJob{Blob: bl, Inputs: inputs, Cursors: cout, CursorStride: int(stride), Poses: poses, Bones: int(bones)}
	return job.RunRange(int(d.Begin), int(d.End))
}

// hostView is sched.ViewOf (per T values a stream element) with errors
// naming the kernel and the stream.
func hostView[T any](s *sched.Stream, dir string, i int, per uint32) ([]T, error) {
	v, err := sched.ViewOf[T](*s, per)
	if err != nil {
		return nil, fmt.Errorf("anim: sampling kernel: %s stream %d: %w", dir, i, err)
	}
	return v, nil
}
