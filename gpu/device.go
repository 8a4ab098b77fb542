package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vkjobs/vkjobs/gpu/bind"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/sched"
)

// Options configures Open. The zero value picks the best device without
// validation.
type Options struct {
	// Device overrides automatic selection: a device index ("1") or a
	// case-insensitive name substring ("llvmpipe"). Empty: the EnvDevice
	// variable (VKJOBS_DEVICE), then automatic selection (see SelectDevice).
	Device string
	// Validation enables VK_LAYER_KHRONOS_validation and VK_EXT_debug_report.
	// Open fails when they are missing (Debian: vulkan-validationlayers).
	// The environment variable VKJOBS_VALIDATION=1 enables it too (see
	// EnvValidation).
	Validation bool
	// OnMessage, when set, receives every debug-report message (validation
	// errors and warnings). It is called on whichever goroutine made the
	// Vulkan call, possibly while package locks are held: it must be quick
	// and must not call into package gpu. A panic in it is recovered (it
	// would have to unwind through the layer's C frames) and kept as an
	// error message. Messages are also kept: see Device.Messages.
	OnMessage func(Message)
	// ForceStaging makes the device behave as if its device-local memory
	// were not host-visible: streams go through staging buffers and copy
	// commands. For tests and measurements of the discrete-GPU path on
	// unified-memory devices such as lavapipe.
	ForceStaging bool
	// AppName is reported to the driver; default "vkjobs".
	AppName string
	// InstanceExtensions and DeviceExtensions are enabled in addition to
	// what the package needs (for example surface and swapchain extensions
	// for graphics). Names need no trailing NUL.
	InstanceExtensions []string
	DeviceExtensions   []string
	// PipelineCacheFile, when set, seeds the VkPipelineCache from this file
	// at Open (a missing or stale file is ignored) and writes it back at
	// Close.
	PipelineCacheFile string
}

// EnvValidation enables validation when set to 1, true, yes or on (any
// case); 0, false, no, off or empty leave it as Options.Validation says;
// any other value makes Open fail, naming it (a misspelt "ture" would
// otherwise run unvalidated without a word).
const EnvValidation = "VKJOBS_VALIDATION"

const validationLayer = "VK_LAYER_KHRONOS_validation"

// Severity of a debug-report message.
type Severity int

const (
	SeverityInfo Severity = iota
	SeverityWarning
	SeverityPerformance
	SeverityError
	SeverityDebug
)

func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityPerformance:
		return "performance warning"
	case SeverityError:
		return "error"
	case SeverityDebug:
		return "debug"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// VK_EXT_debug_report flag bits.
const (
	drInfo        = 0x1
	drWarning     = 0x2
	drPerformance = 0x4
	drError       = 0x8
	drDebug       = 0x10
	drReported    = drWarning | drPerformance | drError
)

func severityOf(flags uint32) Severity {
	switch {
	case flags&drError != 0:
		return SeverityError
	case flags&drWarning != 0:
		return SeverityWarning
	case flags&drPerformance != 0:
		return SeverityPerformance
	case flags&drDebug != 0:
		return SeverityDebug
	}
	return SeverityInfo
}

// Message is one debug-report message (validation layer or driver).
type Message struct {
	Severity Severity
	Code     int32
	Layer    string
	Text     string
}

func (m Message) String() string {
	return fmt.Sprintf("%s %v [%d]: %s", m.Layer, m.Severity, m.Code, m.Text)
}

// messageLog keeps the messages of one device.
type messageLog struct {
	mu     sync.Mutex
	msgs   []Message // the first maxKeptMessages
	errors int
	total  int
	on     func(Message)
}

const maxKeptMessages = 256

func (m *messageLog) add(msg Message) {
	m.mu.Lock()
	m.total++
	if msg.Severity == SeverityError {
		m.errors++
	}
	if len(m.msgs) < maxKeptMessages {
		m.msgs = append(m.msgs, msg)
	}
	on := m.on
	m.mu.Unlock()
	if on != nil {
		m.call(on, msg)
	}
}

// call runs the user's OnMessage. It runs inside a callback from C (the
// layer's debug callback), through which a panic cannot unwind: it would
// crash the process. A panic is kept as an error message instead.
func (m *messageLog) call(on func(Message), msg Message) {
	defer func() {
		if r := recover(); r != nil {
			m.mu.Lock()
			m.total++
			m.errors++
			if len(m.msgs) < maxKeptMessages {
				m.msgs = append(m.msgs, Message{Severity: SeverityError, Layer: "vkjobs",
					Text: fmt.Sprintf("Options.OnMessage panicked on a %v message: %v", msg.Severity, r)})
			}
			m.mu.Unlock()
		}
	}()
	on(msg)
}

// Fault is a failure the device simulates once, for tests of failure
// handling on a real device (see Device.InjectFault).
type Fault int

const (
	// FaultSubmitDeviceLost makes the next vkQueueSubmit return
	// VK_ERROR_DEVICE_LOST without submitting anything; the device then
	// counts as lost, as after a real loss.
	FaultSubmitDeviceLost Fault = iota + 1
	// FaultAllocation makes the next vkAllocateMemory return
	// VK_ERROR_OUT_OF_DEVICE_MEMORY without calling the driver.
	FaultAllocation
	// FaultStall makes the next command buffer an executor records wait,
	// before any of its work, for a Vulkan event that only
	// Device.ReleaseStall (or Device.Close) sets: GPU work that provably
	// cannot finish however fast or loaded the machine is, for tests of
	// fence time-outs.
	FaultStall
)

// limits are the device limits the package uses.
type limits struct {
	maxStorageRange   uint64
	maxUniformRange   uint64
	storageAlign      uint64
	uniformAlign      uint64
	maxGroupCount     uint32
	maxGroupSize      uint32
	maxInvocations    uint32
	maxPushConstants  uint32
	maxStorageBuffers uint32
	maxUniformBuffers uint32
	timestampPeriod   float64
	timestampBits     uint32
	maxViewport       [2]uint32
}

type memType struct {
	flags vk.MemoryPropertyFlags
	heap  uint32
}

// Device is an opened Vulkan device: instance, physical device, one queue,
// memory types, the pipeline cache and the GPU-resident buffers. It is safe
// for concurrent use. Close it after every Executor made on it is closed
// (Close closes those still open).
type Device struct {
	sel       Selection
	inst      vk.Instance
	phys      vk.PhysicalDevice
	dev       vk.Device
	queue     vk.Queue
	qfam      uint32
	lim       limits
	memTypes  []memType
	heaps     []uint64
	hmu       sync.Mutex
	heapUsed  []uint64 // bytes this device allocated per heap (newBlock)
	direct    bool     // streams live in device-local, host-visible, coherent memory
	robust    bool     // robustBufferAccess enabled
	props2    bool     // instance has VK_KHR_get_physical_device_properties2
	scalar    bool     // scalarBlockLayout enabled (VK_EXT_scalar_block_layout)
	types     uint32   // shader type features enabled (vk.FeatureFloat64, ...)
	sbClass   bool     // VK_KHR_storage_buffer_storage_class enabled
	cacheUUID [16]byte // pipelineCacheUUID, checked against a cache file's header
	// Pipeline stages of the timestamps written before and after each
	// dispatch: see pickDevice.
	tsBegin, tsEnd vk.PipelineStageFlags
	shim           vk.Dev
	opts           Options

	log     *messageLog
	sinkID  uintptr
	debugCB uint64

	qmu sync.Mutex // external synchronisation of the queue

	pmu    sync.Mutex
	pcache vk.PipelineCache
	pipes  map[pipeKey]*pipeline

	bmu     sync.RWMutex
	bufs    map[sched.BufferID]*Buffer
	arenas  map[*Arena]struct{} // open arenas (under bmu), freed by Close
	nextBuf uint32
	dummy   *Buffer

	tmu      sync.Mutex // one-shot transfers (Buffer.Write/Read without mapping)
	transfer *oneShot

	lost    atomic.Bool
	lostMu  sync.Mutex
	lostErr error
	lostCh  chan struct{}

	faultSubmit atomic.Int32
	faultAlloc  atomic.Int32
	faultStall  atomic.Int32
	stallMu     sync.Mutex
	stallEv     vk.Event // FaultStall's event, created on first use

	clockOnce sync.Once
	clockOff  int64 // host ns (sched.Nanotime) = gpu ns + clockOff

	emu     sync.Mutex
	execs   map[*Executor]struct{}
	closers map[any]func() error // devhook.Device.OnClose: objects built on the device (a gfx.Graphics)
	closed  bool
	closing atomic.Bool // set at the start of Close
}

// Open creates a Vulkan instance and a device on the selected physical
// device. Errors wrap ErrNoDevice when there is no loader, no driver or no
// usable device (the message says what to install), and ErrDeviceOverride
// instead when a device was named (Options.Device, VKJOBS_DEVICE) and
// cannot be had: a named device is never replaced by the CPU.
func Open(opts Options) (*Device, error) {
	d, err := openDevice(opts)
	if err != nil && errors.Is(err, ErrNoDevice) {
		override, source := opts.Device, "Options.Device"
		if override == "" {
			override, source = os.Getenv(EnvDevice), EnvDevice
		}
		if override != "" {
			err = fmt.Errorf("%w: %s=%q names a device, but %s", ErrDeviceOverride, source, override, err.Error())
		}
	}
	return d, err
}

func openDevice(opts Options) (*Device, error) {
	if err := loadVulkan(); err != nil {
		return nil, err
	}
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(EnvValidation))); v {
	case "1", "true", "yes", "on":
		opts.Validation = true
	case "", "0", "false", "no", "off":
	default:
		return nil, fmt.Errorf("gpu: %s=%q: want 1 (validation on) or 0", EnvValidation, os.Getenv(EnvValidation))
	}
	if opts.AppName == "" {
		opts.AppName = "vkjobs"
	}
	d := &Device{
		opts:   opts,
		log:    &messageLog{on: opts.OnMessage},
		pipes:  map[pipeKey]*pipeline{},
		bufs:   map[sched.BufferID]*Buffer{},
		arenas: map[*Arena]struct{}{},
		lostCh: make(chan struct{}),
		execs:  map[*Executor]struct{}{},
	}
	d.sinkID = registerSink(d.log)
	ok := false
	defer func() {
		if !ok {
			d.destroy()
		}
	}()
	if err := d.createInstance(); err != nil {
		return nil, err
	}
	if err := d.pickDevice(); err != nil {
		return nil, err
	}
	if err := d.createDevice(); err != nil {
		return nil, err
	}
	if err := d.createPipelineCache(); err != nil {
		return nil, err
	}
	var err error
	if d.dummy, err = d.newBuffer(256, false); err != nil {
		return nil, err
	}
	ok = true
	return d, nil
}

func (d *Device) createInstance() error {
	var layers, exts []string
	if d.opts.Validation {
		if !vk.HasInstanceLayer(validationLayer) {
			return fmt.Errorf("gpu: validation requested but the instance layer %s is not installed (Debian: apt-get install vulkan-validationlayers)", validationLayer)
		}
		layers = append(layers, validationLayer)
		exts = append(exts, "VK_EXT_debug_report")
	}
	exts = append(exts, d.opts.InstanceExtensions...)
	if len(layers) > vk.MaxNames || len(exts) > vk.MaxNames {
		return fmt.Errorf("gpu: %d instance layers and %d instance extensions: at most %d of each", len(layers), len(exts), vk.MaxNames)
	}
	// Portability drivers (MoltenVK on macOS) are listed by loaders from
	// 1.3.216 on only when the instance asks for them; their devices then
	// need VK_KHR_portability_subset (createDevice), which needs this
	// instance extension on Vulkan 1.0.
	var flags uint32
	if vk.HasInstanceExtension(portabilityEnumeration) {
		flags |= vk.InstanceCreateEnumeratePortabilityBit
		if !slices.Contains(exts, portabilityEnumeration) {
			exts = append(exts, portabilityEnumeration)
		}
	}
	// VK_KHR_get_physical_device_properties2, wherever the loader has it:
	// portability devices need it, and createDevice queries and enables
	// scalarBlockLayout through it.
	if vk.HasInstanceExtension(physicalDeviceProperties2) && !slices.Contains(exts, physicalDeviceProperties2) {
		exts = append(exts, physicalDeviceProperties2)
	}
	d.props2 = slices.Contains(exts, physicalDeviceProperties2)
	ci := &vk.InstanceInfo{
		AppName:    d.opts.AppName,
		EngineName: "vkjobs",
		APIVersion: vk.MakeVersion(1, 0, 0),
		Flags:      flags,
		Layers:     layers,
		Extensions: exts,
	}
	if d.opts.Validation {
		// Chained so that messages of vkCreateInstance and
		// vkDestroyInstance (leak reports) are caught too.
		ci.DebugFlags, ci.DebugUser = drReported, d.sinkID
	}
	inst, vr := vk.CreateInstance(ci)
	r := Result(vr)
	if r != Success {
		err := check("vkCreateInstance", r)
		if r == ErrorIncompatibleDriver || r == ErrorInitializationFailed {
			return fmt.Errorf("%w: %w; no Vulkan driver (ICD) found; %s", ErrNoDevice, err, installHint)
		}
		if r == ErrorExtensionNotPresent || r == ErrorLayerNotPresent {
			return fmt.Errorf("%w (layers %q, extensions %q)", err, layers, exts)
		}
		return err
	}
	d.inst = inst
	if d.opts.Validation {
		cb, r := vk.DebugCreate(inst, drReported, d.sinkID)
		if err := check("vkCreateDebugReportCallbackEXT", Result(r)); err != nil {
			return err
		}
		d.debugCB = cb
	}
	return nil
}

// physicalDevices enumerates the instance's devices with their properties.
func (d *Device) physicalDevices() ([]vk.PhysicalDevice, []DeviceInfo, error) {
	pds, r := vk.PhysicalDevices(d.inst)
	if err := check("vkEnumeratePhysicalDevices", Result(r)); err != nil {
		return nil, nil, err
	}
	if len(pds) == 0 {
		return nil, nil, nil
	}
	infos := make([]DeviceInfo, len(pds))
	for i, pd := range pds {
		p := vk.PhysicalDeviceProperties(d.inst, pd)
		infos[i] = DeviceInfo{
			Index:      i,
			Name:       p.Name,
			Type:       DeviceType(p.Type),
			VendorID:   p.VendorID,
			DeviceID:   p.DeviceID,
			APIVersion: vk.VersionString(p.APIVersion),
			Driver:     p.DriverVersion,
		}
		for _, e := range d.opts.DeviceExtensions {
			if !vk.HasDeviceExtension(d.inst, pd, e) {
				infos[i].Missing = append(infos[i].Missing, e)
			}
		}
		fams := vk.QueueFamilies(d.inst, pd)
		if q := pickQueueFamily(fams); q >= 0 {
			infos[i].Compute = true
			infos[i].Timestamps = fams[q].TimestampValid > 0
		}
	}
	return pds, infos, nil
}

// pickQueueFamily returns the queue family the device's one queue comes
// from, or -1 if none can compute: the first graphics+compute family (the
// universal queue, which can also draw and present), else the first
// compute family. DeviceInfo.Compute and Timestamps describe this family
// and pickDevice opens it, so the timestamp support a listing reports is
// the one the executor gets (a device whose async-compute family has
// timestamps and whose universal family does not would otherwise be
// listed with timestamps it never uses).
func pickQueueFamily(fams []vk.QueueFamily) int {
	best := -1
	for i, f := range fams {
		if f.Flags&vk.QueueComputeBit == 0 || f.Count == 0 {
			continue
		}
		universal := f.Flags&vk.QueueGraphicsBit != 0
		if best < 0 || (universal && fams[best].Flags&vk.QueueGraphicsBit == 0) {
			best = i
		}
	}
	return best
}

// Devices lists the physical devices the Vulkan loader reports, for
// diagnostics. It creates and destroys a short-lived instance.
func Devices() ([]DeviceInfo, error) {
	if err := loadVulkan(); err != nil {
		return nil, err
	}
	d := &Device{opts: Options{AppName: "vkjobs"}, log: &messageLog{}}
	defer d.destroy()
	if err := d.createInstance(); err != nil {
		return nil, err
	}
	_, infos, err := d.physicalDevices()
	return infos, err
}

func (d *Device) pickDevice() error {
	pds, infos, err := d.physicalDevices()
	if err != nil {
		return err
	}
	override, source := d.opts.Device, "Options.Device"
	if override == "" {
		override, source = os.Getenv(EnvDevice), EnvDevice
	}
	sel, err := SelectDevice(infos, override, source)
	if err != nil {
		return err
	}
	d.sel = sel
	d.phys = pds[sel.Chosen.Index]

	p := vk.PhysicalDeviceProperties(d.inst, d.phys)
	d.cacheUUID = p.PipelineCacheUUID
	l := &p.Limits
	d.lim = limits{
		maxStorageRange:   uint64(l.MaxStorageBufferRange),
		maxUniformRange:   uint64(l.MaxUniformBufferRange),
		storageAlign:      max(uint64(l.MinStorageBufferOffsetAlignment), 4),
		uniformAlign:      max(uint64(l.MinUniformBufferOffsetAlignment), 4),
		maxGroupCount:     l.MaxComputeWorkGroupCount[0],
		maxGroupSize:      l.MaxComputeWorkGroupSize[0],
		maxInvocations:    l.MaxComputeWorkGroupInvocations,
		maxPushConstants:  l.MaxPushConstantsSize,
		maxStorageBuffers: l.MaxPerStageDescriptorStorageBuffers,
		maxUniformBuffers: l.MaxPerStageDescriptorUniformBuffers,
		timestampPeriod:   float64(l.TimestampPeriod),
		maxViewport:       l.MaxViewportDimensions,
	}

	fams := vk.QueueFamilies(d.inst, d.phys)
	best := pickQueueFamily(fams)
	if best < 0 {
		return fmt.Errorf("%w: device %v has no compute queue", ErrNoDevice, sel.Chosen)
	}
	d.qfam = uint32(best)
	d.lim.timestampBits = fams[best].TimestampValid
	// A GPU writes a BOTTOM_OF_PIPE timestamp when all earlier commands
	// have completed: one before and one after a dispatch bracket it. A
	// CPU implementation runs the commands of a queue one after another
	// (lavapipe's vkCmdDispatch returns when the grid is done), so a
	// TOP_OF_PIPE timestamp there is just as exact; and it is much cheaper:
	// lavapipe flushes its context for any other stage, which costs more
	// than a tiny dispatch itself (a batch of tiny dispatches with
	// BOTTOM_OF_PIPE stamps took several times as long as with TOP_OF_PIPE
	// ones, which cost as much as no timestamps at all).
	d.tsBegin, d.tsEnd = vk.PipelineStageBottomOfPipeBit, vk.PipelineStageBottomOfPipeBit
	if sel.Chosen.Type == TypeCPU {
		d.tsBegin, d.tsEnd = vk.PipelineStageTopOfPipeBit, vk.PipelineStageTopOfPipeBit
	}

	types, heaps := vk.MemoryProperties(d.inst, d.phys)
	for _, t := range types {
		d.memTypes = append(d.memTypes, memType{t.Flags, t.Heap})
	}
	d.heaps = heaps
	d.direct = !d.opts.ForceStaging && directMemory(sel.Chosen.Type, d.memTypes, d.heaps)
	return nil
}

// directMemory reports whether streams should live in memory the host maps
// (device-local, host-visible, coherent): on unified-memory devices
// (integrated, CPU, virtual) and with resizable BAR, where such a type's
// heap is (nearly) the whole of the largest device-local heap. A discrete
// GPU without resizable BAR also offers such a type, but only on a BAR
// window of about 256 MiB: putting every buffer there would run out of it
// (and the host reads that write-combined memory very slowly), so such a
// device stages through host memory instead.
func directMemory(typ DeviceType, types []memType, heaps []uint64) bool {
	local := vk.MemoryPropertyDeviceLocalBit
	want, prefer := directMemFlags()
	var largest uint64
	for _, t := range types {
		if int(t.heap) < len(heaps) && t.flags&local != 0 {
			largest = max(largest, heaps[t.heap])
		}
	}
	// The type newBlock will allocate direct memory from (the same
	// choice), so that the heap measured here is the heap used.
	ti := chooseMemType(types, heaps, ^uint32(0), want, prefer)
	if ti < 0 || heaps[types[ti].heap] == 0 {
		return false
	}
	if typ == TypeIntegrated || typ == TypeCPU || typ == TypeVirtual {
		return true
	}
	mapped := heaps[types[ti].heap]
	return mapped >= largest-largest/10
}

// directMemFlags are the flags newBlock asks for direct memory with: the
// memory type must have want, and one that also has prefer is preferred.
func directMemFlags() (want, prefer vk.MemoryPropertyFlags) {
	want = vk.MemoryPropertyDeviceLocalBit | vk.MemoryPropertyHostVisibleBit | vk.MemoryPropertyHostCoherentBit
	return want, want | vk.MemoryPropertyHostCachedBit
}

// Portability extensions (see createInstance and createDevice).
const (
	portabilityEnumeration    = "VK_KHR_portability_enumeration"
	physicalDeviceProperties2 = "VK_KHR_get_physical_device_properties2"
	portabilitySubset         = "VK_KHR_portability_subset"
	scalarBlockLayoutExt      = "VK_EXT_scalar_block_layout"
	storageBufferClassExt     = "VK_KHR_storage_buffer_storage_class"
)

// ScalarBlockLayout reports whether the device was created with the
// scalarBlockLayout feature (enabled whenever the device has it): shaders
// may then lay out buffers and push constants with layout(scalar)
// (GL_EXT_scalar_block_layout).
func (d *Device) ScalarBlockLayout() bool { return d.scalar }

// checkModuleFeatures refuses a module that needs a device feature the
// device was not created with: without it, the driver would get a module
// whose layout it does not support (undefined behaviour; the validation
// layer reports it).
func (d *Device) checkModuleFeatures(b *Binding) error {
	m, err := bind.ParseSPIRV(b.SPIRV)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadBinding, err)
	}
	if m.NeedsScalarBlockLayout && !d.scalar {
		block := "a block of the shader"
		if m.ScalarLayoutBlock != "" {
			block = fmt.Sprintf("the shader's block %q", m.ScalarLayoutBlock)
		}
		return fmt.Errorf("%w: %s uses the scalar block layout (layout(scalar), GL_EXT_scalar_block_layout: offsets or strides such as a vec3 array's 12 that std430 does not allow), but the device %q lacks the scalarBlockLayout feature (VK_EXT_scalar_block_layout): use std430 with float or vec4 elements", ErrBadBinding, block, d.sel.Chosen.Name)
	}
	for _, e := range m.Extensions {
		switch {
		case e == "SPV_KHR_storage_buffer_storage_class" && d.sbClass:
			continue
		case e == "SPV_KHR_storage_buffer_storage_class":
			return fmt.Errorf("%w: the shader declares the SPIR-V extension %s (storage buffers in the StorageBuffer storage class, as naga and SPIR-V 1.3 compilers emit them), but the device %q lacks VK_KHR_storage_buffer_storage_class: compile for Vulkan 1.0 with glslc or glslangValidator", ErrBadBinding, e, d.sel.Chosen.Name)
		}
		return fmt.Errorf("%w: the shader declares the SPIR-V extension %s, which needs a device extension or feature that package gpu does not enable: a Vulkan driver may crash or compute garbage on it", ErrBadBinding, e)
	}
	for _, c := range m.Capabilities {
		if d.capabilityEnabled(c) {
			continue
		}
		name, ok := spvCapabilityNames[c]
		if !ok {
			name = fmt.Sprintf("capability %d", c)
		}
		why := "which the device was not created with"
		switch {
		case c == capFloat64 || c == capInt64 || c == capInt16:
			why = fmt.Sprintf("which needs the device feature %s, which the device %q lacks", spvCapabilityFeature[c], d.sel.Chosen.Name)
		case spvCapabilityFeature[c] != "":
			why = fmt.Sprintf("which needs %s, which package gpu does not enable", spvCapabilityFeature[c])
		}
		return fmt.Errorf("%w: the shader declares the SPIR-V capability %s, %s: a Vulkan driver may crash or compute garbage on it (use 32-bit element types and pack narrower ones into uints)", ErrBadBinding, name, why)
	}
	return nil
}

// SPIR-V capabilities that checkModuleFeatures knows.
const (
	capMatrix            = 0
	capShader            = 1
	capFloat16           = 9
	capFloat64           = 10
	capInt64             = 11
	capInt64Atomics      = 12
	capInt16             = 22
	capInt8              = 39
	capInputAttachment   = 40
	capSampled1D         = 43
	capImage1D           = 44
	capSampledBuffer     = 46
	capImageBuffer       = 47
	capImageQuery        = 50
	capDerivativeControl = 51
	capStorageBuffer16   = 4433
	capUniformStorage16  = 4434
	capPushConstant16    = 4435
	capInputOutput16     = 4436
	capStorageBuffer8    = 4448
	capUniformStorage8   = 4449
	capPushConstant8     = 4450
)

var spvCapabilityNames = map[uint32]string{
	capFloat16: "Float16", capFloat64: "Float64", capInt64: "Int64", capInt64Atomics: "Int64Atomics",
	capInt16: "Int16", capInt8: "Int8",
	capStorageBuffer16: "StorageBuffer16BitAccess", capUniformStorage16: "UniformAndStorageBuffer16BitAccess",
	capPushConstant16: "StoragePushConstant16", capInputOutput16: "StorageInputOutput16",
	capStorageBuffer8: "StorageBuffer8BitAccess", capUniformStorage8: "UniformAndStorageBuffer8BitAccess",
	capPushConstant8: "StoragePushConstant8",
}

// spvCapabilityFeature names what a capability needs, for messages.
var spvCapabilityFeature = map[uint32]string{
	capFloat64: "shaderFloat64", capInt64: "shaderInt64", capInt16: "shaderInt16",
	capInt64Atomics:    "VK_KHR_shader_atomic_int64",
	capFloat16:         "VK_KHR_shader_float16_int8's shaderFloat16",
	capInt8:            "VK_KHR_shader_float16_int8's shaderInt8",
	capStorageBuffer16: "VK_KHR_16bit_storage", capUniformStorage16: "VK_KHR_16bit_storage",
	capPushConstant16: "VK_KHR_16bit_storage", capInputOutput16: "VK_KHR_16bit_storage",
	capStorageBuffer8: "VK_KHR_8bit_storage", capUniformStorage8: "VK_KHR_8bit_storage",
	capPushConstant8: "VK_KHR_8bit_storage",
}

// capabilityEnabled reports whether a module may declare capability c on
// this device: the capabilities every Vulkan 1.0 device supports, and
// Float64, Int64 and Int16 where the device was created with their
// features. Any other (8- and 16-bit storage, Float16, Int8, atomics on
// 64-bit integers, extensions' capabilities) is refused rather than passed
// to a driver that may not support it: it needs a feature or an extension
// that this package does not enable, and without the validation layer a
// driver is not required to report it. Rejected: a list of the
// capabilities to refuse (a capability it missed would reach the driver).
func (d *Device) capabilityEnabled(c uint32) bool {
	switch c {
	case capMatrix, capShader, capInputAttachment, capSampled1D, capImage1D, capSampledBuffer, capImageBuffer, capImageQuery, capDerivativeControl:
		return true
	case capFloat64:
		return d.types&vk.FeatureFloat64 != 0
	case capInt64:
		return d.types&vk.FeatureInt64 != 0
	case capInt16:
		return d.types&vk.FeatureInt16 != 0
	}
	return false
}

func (d *Device) createDevice() error {
	exts := slices.Clone(d.opts.DeviceExtensions)
	// A device that lists VK_KHR_portability_subset (MoltenVK) must have it
	// enabled (VUID-VkDeviceCreateInfo-pProperties-04451).
	if vk.HasDeviceExtension(d.inst, d.phys, portabilitySubset) && !slices.Contains(d.opts.DeviceExtensions, portabilitySubset) {
		exts = append(exts, portabilitySubset)
	}
	var layers []string
	if d.opts.Validation {
		layers = []string{validationLayer} // for pre-1.0.13 loaders
	}
	// The scalar block layout, where the device has it (desktop GPUs and
	// lavapipe do): shaders may then declare layout(scalar) blocks, such
	// as a vec3 array with a stride of 12 for a packed 12-byte stream. A
	// module that needs it on a device without it is refused when its
	// pipeline is created (checkModuleFeatures), never run.
	d.scalar = false
	if d.props2 && vk.HasDeviceExtension(d.inst, d.phys, scalarBlockLayoutExt) && vk.ScalarBlockLayout(d.inst, d.phys) {
		d.scalar = true
		if !slices.Contains(exts, scalarBlockLayoutExt) {
			exts = append(exts, scalarBlockLayoutExt)
		}
	}
	// Storage buffers in the StorageBuffer storage class (core in Vulkan
	// 1.1, an extension on this Vulkan 1.0 instance), where the device has
	// them: naga and compilers targeting SPIR-V 1.3 declare storage
	// buffers so. A module that declares SPV_KHR_storage_buffer_storage_class
	// on a device without it is refused (checkModuleFeatures).
	d.sbClass = vk.HasDeviceExtension(d.inst, d.phys, storageBufferClassExt)
	if d.sbClass && !slices.Contains(exts, storageBufferClassExt) {
		exts = append(exts, storageBufferClassExt)
	}
	if len(exts) > vk.MaxNames {
		return fmt.Errorf("gpu: %d device extensions: at most %d", len(exts), vk.MaxNames)
	}
	// Robust buffer access, where the device has it (every desktop GPU
	// does): a shader index that a bug or bad data pushes past its buffer
	// then reads zeros or stays in bounds and drops the write, instead of
	// touching other memory or losing the device. lavapipe always checks
	// bounds, so without the feature a real GPU could fail where the tests
	// here pass.
	d.robust = vk.RobustBufferAccess(d.inst, d.phys)
	// 64-bit floats and integers and 16-bit integers in shaders, where the
	// device has them: a kernel may then compute in double or int64_t. A
	// module that declares a capability the device was not created with is
	// refused when its pipeline is created (checkModuleFeatures).
	d.types = vk.ShaderTypeFeatures(d.inst, d.phys)
	dev, r := vk.CreateDevice(d.inst, d.phys, d.qfam, layers, exts, d.robust, d.scalar, d.types)
	if err := check("vkCreateDevice", Result(r)); err != nil {
		d.robust, d.scalar, d.types, d.sbClass = false, false, 0, false
		return fmt.Errorf("%w (device %v)", err, d.sel.Chosen)
	}
	d.dev = dev
	s, err := newDevTable(d.inst, dev)
	if err != nil {
		vk.DestroyDeviceWithoutTable(d.inst, dev) // destroy has no table to do it with
		d.dev = 0
		return err
	}
	d.shim = s
	d.queue = s.Queue(d.qfam, 0)
	return nil
}

func (d *Device) createPipelineCache() error {
	var data []byte
	if f := d.opts.PipelineCacheFile; f != "" {
		data, _ = os.ReadFile(f) // a missing cache is not an error
		if !cacheMatches(data, d.sel.Chosen.VendorID, d.sel.Chosen.DeviceID, d.cacheUUID) {
			data = nil // another device's or driver's cache: start empty
		}
	}
	pc, r := d.shim.CreatePipelineCache(data)
	if err := check("vkCreatePipelineCache", Result(r)); err != nil {
		return err
	}
	d.pcache = pc
	return nil
}

// cacheMatches reports whether pipeline cache data begins with the header
// (version one) of this device and driver: some drivers have crashed on
// a cache written by another GPU or driver version instead of ignoring it.
func cacheMatches(data []byte, vendor, device uint32, uuid [16]byte) bool {
	if len(data) < 32 {
		return false
	}
	le := binary.LittleEndian
	return le.Uint32(data[0:]) >= 32 && le.Uint32(data[4:]) == 1 && // VK_PIPELINE_CACHE_HEADER_VERSION_ONE
		le.Uint32(data[8:]) == vendor && le.Uint32(data[12:]) == device && [16]byte(data[16:32]) == uuid
}

func (d *Device) savePipelineCache() error {
	f := d.opts.PipelineCacheFile
	if f == "" || d.pcache == 0 {
		return nil
	}
	buf, r := d.shim.PipelineCacheData(d.pcache)
	if err := check("vkGetPipelineCacheData", Result(r)); err != nil || len(buf) == 0 {
		return err
	}
	return os.WriteFile(f, buf, 0o644)
}

// Selection reports which device was chosen and why.
func (d *Device) Selection() Selection { return d.sel }

// Name returns the device name.
func (d *Device) Name() string { return d.sel.Chosen.Name }

// HostVisible reports whether streams live in device-local memory that the
// host maps directly (unified memory, resizable BAR, lavapipe) instead of
// going through staging copies.
func (d *Device) HostVisible() bool { return d.direct }

// BindingAlignment returns the device's minimum offset alignments for
// binding part of a buffer as a storage and as a uniform buffer
// (minStorageBufferOffsetAlignment, minUniformBufferOffsetAlignment; 16
// and 64 on lavapipe, up to 256 on desktop GPUs). A stream's Offset into a
// device buffer (Stream.Buffer) must be a multiple of the one its binding
// uses.
func (d *Device) BindingAlignment() (storage, uniform uint64) {
	return d.lim.storageAlign, d.lim.uniformAlign
}

// Limits are what decides whether a workload fits the device: check them
// before the work (a binding past MaxStorageBufferRange fails its task, an
// allocation past DeviceMemory fails with ErrOutOfMemory), and scale fence
// time-outs on a CPU device, whose work competes with the host's.
type Limits struct {
	MaxStorageBufferRange uint64 // bytes one storage binding may span
	MaxUniformBufferRange uint64 // bytes one uniform binding may span
	// MaxComputeWorkGroupCount is maxComputeWorkGroupCount[0]; the
	// executor splits a larger dispatch into chunks, so it limits nothing.
	MaxComputeWorkGroupCount uint32
	MaxComputeWorkGroupSize  uint32 // maxComputeWorkGroupSize[0]
	// DeviceMemory is the size of the heap GPU-resident buffers
	// (NewBuffer) come from, and DeviceMemoryUsed what this device has
	// allocated there so far (buffers, arenas, staging twins).
	DeviceMemory, DeviceMemoryUsed uint64
	// CPU: the device is a CPU implementation (lavapipe), whose work runs
	// on the host's cores beside the program's own threads.
	CPU bool
}

// Limits returns the device's limits and memory use.
func (d *Device) Limits() Limits {
	l := Limits{
		MaxStorageBufferRange:    d.lim.maxStorageRange,
		MaxUniformBufferRange:    d.lim.maxUniformRange,
		MaxComputeWorkGroupCount: d.lim.maxGroupCount,
		MaxComputeWorkGroupSize:  d.lim.maxGroupSize,
		CPU:                      d.sel.Chosen.Type == TypeCPU,
	}
	if ti, ok := d.findMemType(^uint32(0), vk.MemoryPropertyDeviceLocalBit, 0); ok {
		h := d.memTypes[ti].heap
		l.DeviceMemory = d.heaps[h]
		d.hmu.Lock()
		if int(h) < len(d.heapUsed) {
			l.DeviceMemoryUsed = d.heapUsed[h]
		}
		d.hmu.Unlock()
	}
	return l
}

// RobustBufferAccess reports whether the device was created with the
// robustBufferAccess feature (enabled whenever the device has it):
// out-of-bounds shader accesses to buffers are then contained.
func (d *Device) RobustBufferAccess() bool { return d.robust }

// Timestamps reports whether the queue supports timestamps.
func (d *Device) Timestamps() bool { return d.lim.timestampBits > 0 }

// Messages returns the debug-report messages received so far (the first
// 256) and the number of error messages in total.
func (d *Device) Messages() (msgs []Message, errors int) {
	d.log.mu.Lock()
	defer d.log.mu.Unlock()
	return append([]Message(nil), d.log.msgs...), d.log.errors
}

// ValidationErr returns an error wrapping ErrValidation that lists the
// error messages received so far, or nil when there were none.
func (d *Device) ValidationErr() error {
	msgs, n := d.Messages()
	if n == 0 {
		return nil
	}
	var b strings.Builder
	for _, m := range msgs {
		if m.Severity == SeverityError {
			b.WriteString("\n\t")
			b.WriteString(m.String())
		}
	}
	return fmt.Errorf("%w: %d error messages:%s", ErrValidation, n, b.String())
}

// InjectFault makes the device simulate f once (see Fault). For tests.
// It fails after Close (ErrClosed), for a Fault it does not know, and when
// FaultStall's event cannot be created.
func (d *Device) InjectFault(f Fault) error {
	if err := d.usable(); err != nil && !errors.Is(err, ErrDeviceLost) {
		return err
	}
	switch f {
	case FaultSubmitDeviceLost:
		d.faultSubmit.Add(1)
	case FaultAllocation:
		d.faultAlloc.Add(1)
	case FaultStall:
		d.stallMu.Lock()
		defer d.stallMu.Unlock()
		if d.closing.Load() || d.dev == 0 {
			return fmt.Errorf("%w: the device was closed (Device.Close)", ErrClosed)
		}
		if d.stallEv == 0 {
			ev, r := d.shim.CreateEvent()
			if err := check("vkCreateEvent", Result(r)); err != nil {
				return err
			}
			d.stallEv = ev
		} else if err := check("vkResetEvent", Result(d.shim.ResetEvent(d.stallEv))); err != nil {
			return err
		}
		d.faultStall.Add(1)
	default:
		return fmt.Errorf("gpu: InjectFault: unknown fault %d", int(f))
	}
	return nil
}

// ReleaseStall sets FaultStall's event: the stalled command buffer runs.
func (d *Device) ReleaseStall() error {
	d.stallMu.Lock()
	defer d.stallMu.Unlock()
	if d.stallEv == 0 {
		return nil
	}
	return check("vkSetEvent", Result(d.shim.SetEvent(d.stallEv)))
}

// stallEvent returns FaultStall's event when a stall is pending, consuming
// it, else 0. Called by the submitter while recording.
func (d *Device) stallEvent() vk.Event {
	if d.faultStall.Load() <= 0 || !takeFault(&d.faultStall) {
		return 0
	}
	d.stallMu.Lock()
	defer d.stallMu.Unlock()
	return d.stallEv
}

// takeFault consumes one pending injection of a fault counter.
func takeFault(c *atomic.Int32) bool {
	for {
		n := c.Load()
		if n <= 0 {
			return false
		}
		if c.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// usable returns ErrClosed after Close began, the loss after a device loss.
func (d *Device) usable() error {
	if d.closing.Load() {
		return fmt.Errorf("%w: the device was closed (Device.Close)", ErrClosed)
	}
	return d.Lost()
}

// Lost reports whether the device is lost, and why.
func (d *Device) Lost() error {
	if !d.lost.Load() {
		return nil
	}
	d.lostMu.Lock()
	defer d.lostMu.Unlock()
	return d.lostErr
}

// markLost records a device loss; every later GPU task fails fast.
func (d *Device) markLost(err error) {
	d.lostMu.Lock()
	defer d.lostMu.Unlock()
	if d.lost.Load() {
		return
	}
	if !errors.Is(err, ErrDeviceLost) {
		err = fmt.Errorf("%w: %w", ErrDeviceLost, err)
	}
	d.lostErr = err
	d.lost.Store(true)
	close(d.lostCh)
}

// submit submits one command buffer with a fence under the queue lock,
// applying an injected FaultSubmitDeviceLost.
func (d *Device) submit(cb vk.CommandBuffer, fence vk.Fence) error {
	return d.submitQueue(cb, fence, false)
}

// submitQueue is submit; held: the caller holds the queue lock.
func (d *Device) submitQueue(cb vk.CommandBuffer, fence vk.Fence, held bool) error {
	if takeFault(&d.faultSubmit) {
		err := check("vkQueueSubmit", ErrorDeviceLost)
		d.markLost(fmt.Errorf("%w (injected fault)", err))
		return err
	}
	if !held {
		d.qmu.Lock()
	}
	r := Result(d.shim.Submit(d.queue, cb, fence))
	if !held {
		d.qmu.Unlock()
	}
	err := check("vkQueueSubmit", r)
	if r == ErrorDeviceLost {
		d.markLost(err)
	}
	return err
}

// waitIdle waits until the queue is idle (errors other than a lost device
// are returned).
func (d *Device) waitIdle() error {
	d.qmu.Lock()
	r := Result(d.shim.QueueIdle(d.queue))
	d.qmu.Unlock()
	if r == ErrorDeviceLost {
		return nil
	}
	return check("vkQueueWaitIdle", r)
}

// Close destroys everything the device owns: it closes executors still
// open, then graphics (gpu/gfx.Graphics) still open, frees every buffer
// and pipeline, and destroys the device and the instance. No goroutine may
// use the device's executors or graphics meanwhile. The returned error
// joins failures to save the pipeline cache and executors' and graphics'
// Close errors; validation messages stay in Messages.
// Calling Close again returns nil.
func (d *Device) Close() error {
	d.emu.Lock()
	if d.closed {
		d.emu.Unlock()
		return nil
	}
	d.closed = true
	d.closing.Store(true)
	execs := make([]*Executor, 0, len(d.execs))
	for e := range d.execs {
		execs = append(execs, e)
	}
	closers := make([]func() error, 0, len(d.closers))
	for _, f := range d.closers {
		closers = append(closers, f)
	}
	clear(d.closers)
	d.emu.Unlock()
	var errs []error
	if err := d.ReleaseStall(); err != nil { // a stalled command buffer would never finish
		errs = append(errs, err)
	}
	for _, e := range execs {
		if err := e.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	// Graphics still open free their objects while the handles are valid.
	for _, f := range closers {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.dev != 0 {
		if err := d.waitIdle(); err != nil {
			errs = append(errs, err)
		}
		for _, e := range execs {
			e.freeLeftover() // the queue is idle now
		}
		if err := d.savePipelineCache(); err != nil {
			errs = append(errs, fmt.Errorf("gpu: saving the pipeline cache: %w", err))
		}
	}
	d.destroy()
	return errors.Join(errs...)
}

// destroy frees whatever exists, in reverse order of creation.
func (d *Device) destroy() {
	d.stallMu.Lock()
	if d.dev != 0 && d.stallEv != 0 {
		d.shim.DestroyEvent(d.stallEv)
		d.stallEv = 0
	}
	d.stallMu.Unlock()
	if d.dev != 0 {
		d.bmu.Lock()
		bufs := make([]*Buffer, 0, len(d.bufs))
		for _, b := range d.bufs {
			bufs = append(bufs, b)
		}
		d.bmu.Unlock()
		for _, b := range bufs {
			b.destroy()
		}
		d.bmu.Lock()
		arenas := make([]*Arena, 0, len(d.arenas))
		for a := range d.arenas {
			arenas = append(arenas, a)
		}
		d.bmu.Unlock()
		for _, a := range arenas {
			a.Close()
		}
		if d.dummy != nil {
			d.dummy.destroy()
			d.dummy = nil
		}
		if d.transfer != nil {
			d.transfer.destroy(d)
			d.transfer = nil
		}
		d.pmu.Lock()
		for k, p := range d.pipes {
			<-p.ready // a creation still running (PreparePipelines racing Close)
			p.destroy(d)
			delete(d.pipes, k)
		}
		if d.pcache != 0 {
			d.shim.DestroyPipelineCache(d.pcache)
			d.pcache = 0
		}
		d.pmu.Unlock()
		d.shim.DestroyDevice()
		d.shim.Free()
		d.shim = vk.Dev{}
		d.dev = 0
	}
	if d.inst != 0 {
		if d.debugCB != 0 {
			vk.DebugDestroy(d.inst, d.debugCB)
			d.debugCB = 0
		}
		vk.DestroyInstance(d.inst)
		d.inst = 0
	}
	if d.sinkID != 0 {
		unregisterSink(d.sinkID)
		d.sinkID = 0
	}
}
