package gpu

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vkjobs/vkjobs/gpu/bind"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/sched"
)

// pipeKey identifies a compute pipeline: the module (by identity of its
// bytes, which live as long as the kernel registration), entry point,
// specialization and descriptor layout.
type pipeKey struct {
	code      *byte
	size      int
	entry     string
	local     uint32
	ipi       uint32
	uniform   [4]bool
	nin, nout int
}

// pipeline is a kernel's compute pipeline with its layouts. A pipeline
// whose creation failed is cached with err set, so its tasks fail fast.
type pipeline struct {
	ready         chan struct{} // closed when creation finished
	err           error
	module        vk.ShaderModule
	setLayout     vk.DescriptorSetLayout
	layout        vk.PipelineLayout
	pipe          vk.Pipeline
	nin, nout     int
	uniform       [4]bool
	itemsPerGroup uint64
	// elem is the element stride of the array each binding's block ends
	// in (from the module; 0 where it states none, or the binding is
	// unused), maxElem the largest. A descriptor's range is rounded up
	// to it (bindStream): a shader that reads several items per element
	// (a uint over four byte items, a vec4 over four floats) would
	// otherwise find its last element partly past the range, where robust
	// buffer access drops its stores and zeroes its loads.
	elem    [FirstOutBinding + bind.MaxStreams]uint32
	maxElem uint64
}

func (p *pipeline) destroy(d *Device) {
	d.shim.DestroyPipeline(p.pipe)
	d.shim.DestroyPipelineLayout(p.layout)
	d.shim.DestroySetLayout(p.setLayout)
	d.shim.DestroyShaderModule(p.module)
	p.pipe, p.layout, p.setLayout, p.module = 0, 0, 0, 0
}

// pipelineFor returns the kernel's compute pipeline, creating it on first
// use. Creation compiles the shader (tens of ms); callers that
// need the same pipeline meanwhile wait for it, others go on.
func (d *Device) pipelineFor(k *sched.Kernel) (*pipeline, error) {
	b, err := bindingOf(k)
	if err != nil {
		return nil, err
	}
	if len(b.SPIRV) == 0 {
		return nil, fmt.Errorf("%w: kernel %q: empty SPIR-V module", ErrBadBinding, k.Name)
	}
	key := pipeKey{code: &b.SPIRV[0], size: len(b.SPIRV), entry: b.Entry, local: b.LocalSize,
		ipi: b.ItemsPerInvocation, uniform: b.UniformIn, nin: len(k.In), nout: len(k.Out)}
	d.pmu.Lock()
	if d.dev == 0 {
		d.pmu.Unlock()
		return nil, fmt.Errorf("%w: the device was closed (Device.Close)", ErrClosed)
	}
	if p := d.pipes[key]; p != nil {
		d.pmu.Unlock()
		<-p.ready
		return p, p.err
	}
	p := &pipeline{ready: make(chan struct{}), nin: len(k.In), nout: len(k.Out), uniform: b.UniformIn,
		itemsPerGroup: uint64(b.LocalSize) * uint64(b.ItemsPerInvocation)}
	d.pipes[key] = p
	d.pmu.Unlock()
	if err := d.createPipeline(p, k, &b, true); err != nil {
		p.destroy(d)
		p.err = fmt.Errorf("kernel %q: %w", k.Name, err)
	}
	close(p.ready)
	return p, p.err
}

// pipelineReady reports whether k's pipeline exists and is ready, so that
// a task of it can be planned without compiling (Enqueue's inline path).
func (d *Device) pipelineReady(k *sched.Kernel) bool {
	if b := bind.Of(k); b == nil || len(b.SPIRV) == 0 {
		return false
	}
	b, _ := bindingOf(k)
	key := pipeKey{code: &b.SPIRV[0], size: len(b.SPIRV), entry: b.Entry, local: b.LocalSize,
		ipi: b.ItemsPerInvocation, uniform: b.UniformIn, nin: len(k.In), nout: len(k.Out)}
	d.pmu.Lock()
	p := d.pipes[key]
	d.pmu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.ready:
		return p.err == nil
	default:
		return false
	}
}

// createPipeline creates p's module, layouts and pipeline. With check, the
// binding is first checked against the kernel's streams (as Register did).
// The calls run on one locked OS thread so that an error message of the
// validation layer during them fails the creation (ErrValidation): an
// invalid pipeline is never bound.
func (d *Device) createPipeline(p *pipeline, k *sched.Kernel, b *Binding, check bool) error {
	if check {
		if err := kernelCheck(k, b); err != nil {
			return err
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	vk.CaptureReset()
	err := d.createPipelineObjects(p, k, b)
	if n, msg := vk.Captured(); n > 0 {
		return fmt.Errorf("%w: %w: the validation layer reported %d error(s) creating the pipeline; the first: %s", ErrBadBinding, ErrValidation, n, msg)
	}
	return err
}

func (d *Device) createPipelineObjects(p *pipeline, k *sched.Kernel, b *Binding) error {
	l := &d.lim
	if b.LocalSize > l.maxGroupSize || b.LocalSize > l.maxInvocations {
		return fmt.Errorf("%w: LocalSize %d exceeds the device's maxComputeWorkGroupSize[0] %d or maxComputeWorkGroupInvocations %d",
			ErrBadBinding, b.LocalSize, l.maxGroupSize, l.maxInvocations)
	}
	if err := d.checkModuleFeatures(b); err != nil {
		return err
	}
	if PushConstantSize > l.maxPushConstants {
		return fmt.Errorf("%w: the device has %d bytes of push constants, the contract needs %d", ErrBadBinding, l.maxPushConstants, PushConstantSize)
	}
	var nstorage, nuniform uint32
	var bindings []vk.SetLayoutBinding
	for i := range k.In {
		t := vk.DescriptorTypeStorageBuffer
		if b.UniformIn[i] {
			t = vk.DescriptorTypeUniformBuffer
			nuniform++
		} else {
			nstorage++
		}
		bindings = append(bindings, vk.SetLayoutBinding{Binding: uint32(FirstInBinding + i), Type: t,
			Count: 1, Stages: vk.ShaderStageComputeBit})
	}
	for j := range k.Out {
		nstorage++
		bindings = append(bindings, vk.SetLayoutBinding{Binding: uint32(FirstOutBinding + j),
			Type: vk.DescriptorTypeStorageBuffer, Count: 1, Stages: vk.ShaderStageComputeBit})
	}
	if nstorage > l.maxStorageBuffers || nuniform > l.maxUniformBuffers {
		return fmt.Errorf("%w: %d storage and %d uniform buffers exceed the device's per-stage limits %d and %d",
			ErrBadBinding, nstorage, nuniform, l.maxStorageBuffers, l.maxUniformBuffers)
	}

	// The module (the shim copies the bytes into words: the []byte need
	// not be 4-aligned).
	module, r := d.shim.CreateShaderModule(b.SPIRV)
	if err := check("vkCreateShaderModule", Result(r)); err != nil {
		return fmt.Errorf("%w: %w", ErrBadBinding, err)
	}
	p.module = module
	if m, err := bind.ParseSPIRV(b.SPIRV); err == nil {
		for _, r := range m.Resources {
			if r.Set == 0 && r.Binding < uint32(len(p.elem)) {
				p.elem[r.Binding] = r.ElemStride
				p.maxElem = max(p.maxElem, uint64(r.ElemStride))
			}
		}
	}

	setLayout, r := d.shim.CreateSetLayout(bindings)
	if err := check("vkCreateDescriptorSetLayout", Result(r)); err != nil {
		return err
	}
	p.setLayout = setLayout

	layout, r := d.shim.CreatePipelineLayout(setLayout, vk.ShaderStageComputeBit, PushConstantSize)
	if err := check("vkCreatePipelineLayout", Result(r)); err != nil {
		return err
	}
	p.layout = layout

	// Specialization constant 0 is the workgroup size X only where the
	// shader says so (layout(local_size_x_id = 0)); a shader with a fixed X
	// may use constant 0 for its own value, which keeps its default.
	spec := b.LocalSize
	if m, err := bind.ParseSPIRV(b.SPIRV); err != nil || m.LocalSizeXSpecID != 0 {
		spec = 0
	}
	pipe, pr := d.shim.ComputePipeline(d.pcache, module, layout, b.Entry, spec)
	if err := check("vkCreateComputePipelines", Result(pr)); err != nil {
		return fmt.Errorf("%w: %w", ErrBadBinding, err)
	}
	p.pipe = pipe
	return nil
}

// PreparePipelines creates the compute pipeline of every kernel in reg that
// has a GPU binding, so that the first task of each kernel does not pay for
// shader compilation. It returns the joined errors of the kernels whose
// pipeline cannot be created (their tasks would fail the same way).
func (d *Device) PreparePipelines(reg *sched.Registry) error {
	var errs []error
	reg.Each(func(id sched.KernelID, k *sched.Kernel) {
		if b, ok := bind.OfKernel(k); ok && b == nil {
			return // no GPU version (a binding of another type fails below)
		}
		if _, err := d.pipelineFor(k); err != nil {
			errs = append(errs, fmt.Errorf("kernel %d: %w", id, err))
		}
	})
	return errors.Join(errs...)
}
