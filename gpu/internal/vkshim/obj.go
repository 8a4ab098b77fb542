package vkshim

// Creation and destruction of the instance, the device and the compute
// backend's objects (obj.c). Instance-level functions go through the one
// vkGetInstanceProcAddr, device-level ones through the device's table
// (Dev, loaded with vkGetDeviceProcAddr). These run at set-up and
// tear-down, not per task; the create-info structs are on the C stack all
// the same, and names travel as one packed Go byte slice.

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strings"
	"unsafe"
)

// MaxNames is the most layers, and the most extensions, CreateInstance
// and CreateDevice take.
const MaxNames = C.VKJ_MAX_NAMES

// packNames returns the names one after another, each NUL-terminated (a
// name that already ends in NUL keeps its one NUL).
func packNames(names []string) []byte {
	var b []byte
	for _, n := range names {
		b = append(b, strings.TrimSuffix(n, "\x00")...)
		b = append(b, 0)
	}
	if len(b) == 0 {
		b = append(b, 0)
	}
	return b
}

func cstr(b []byte) *C.char { return (*C.char)(unsafe.Pointer(&b[0])) }

// InstanceInfo is what vkCreateInstance needs.
type InstanceInfo struct {
	AppName, EngineName string
	APIVersion          uint32
	Flags               uint32 // VkInstanceCreateFlags
	Layers, Extensions  []string
	// DebugFlags, when not 0, chains a debug-report callback (see
	// DebugCreate) with DebugUser as its value, so that the messages of
	// vkCreateInstance and vkDestroyInstance are reported too.
	DebugFlags uint32
	DebugUser  uintptr
}

// CreateInstance calls vkCreateInstance. More than MaxNames layers or
// extensions return ErrorTooManyObjects.
func CreateInstance(in *InstanceInfo) (Instance, Result) {
	app, engine := packNames([]string{in.AppName}), packNames([]string{in.EngineName})
	layers, exts := packNames(in.Layers), packNames(in.Extensions)
	var out C.VkInstance
	r := C.vkj_create_instance(cstr(app), cstr(engine), C.uint32_t(in.APIVersion), C.uint32_t(in.Flags),
		cstr(layers), C.uint32_t(len(in.Layers)), cstr(exts), C.uint32_t(len(in.Extensions)),
		C.uint32_t(in.DebugFlags), C.uintptr_t(in.DebugUser), &out)
	return Instance(uintptr(unsafe.Pointer(out))), Result(r)
}

// DestroyInstance calls vkDestroyInstance (0 is ignored).
func DestroyInstance(inst Instance) {
	if inst != 0 {
		C.vkj_destroy_instance(cInstance(inst))
	}
}

// PhysicalDevices calls vkEnumeratePhysicalDevices (at most 64 devices).
func PhysicalDevices(inst Instance) ([]PhysicalDevice, Result) {
	var buf [64]C.VkPhysicalDevice
	var n C.uint32_t
	r := C.vkj_physical_devices(cInstance(inst), &buf[0], C.uint32_t(len(buf)), &n)
	if r != C.VK_SUCCESS && r != C.VK_INCOMPLETE {
		return nil, Result(r)
	}
	out := make([]PhysicalDevice, n)
	for i := range out {
		out[i] = PhysicalDevice(uintptr(unsafe.Pointer(buf[i])))
	}
	return out, Success
}

// Limits are the VkPhysicalDeviceLimits the backends use.
type Limits struct {
	MaxStorageBufferRange               uint64
	MaxUniformBufferRange               uint64
	MinStorageBufferOffsetAlignment     uint64
	MinUniformBufferOffsetAlignment     uint64
	MaxComputeWorkGroupCount            [3]uint32
	MaxComputeWorkGroupSize             [3]uint32
	MaxComputeWorkGroupInvocations      uint32
	MaxPushConstantsSize                uint32
	MaxPerStageDescriptorStorageBuffers uint32
	MaxPerStageDescriptorUniformBuffers uint32
	MaxViewportDimensions               [2]uint32
	TimestampPeriod                     float32
}

// Properties are the VkPhysicalDeviceProperties the backends use.
type Properties struct {
	Name              string
	Type              uint32 // VkPhysicalDeviceType
	VendorID          uint32
	DeviceID          uint32
	APIVersion        uint32
	DriverVersion     uint32
	PipelineCacheUUID [16]byte
	Limits            Limits
}

// PhysicalDeviceProperties calls vkGetPhysicalDeviceProperties.
func PhysicalDeviceProperties(inst Instance, pd PhysicalDevice) Properties {
	var p C.VkPhysicalDeviceProperties
	C.vkj_physical_device_properties(cInstance(inst), cPhys(pd), &p)
	name := C.GoStringN(&p.deviceName[0], C.int(len(p.deviceName)))
	if i := strings.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	l := &p.limits
	out := Properties{
		Name:          name,
		Type:          uint32(p.deviceType),
		VendorID:      uint32(p.vendorID),
		DeviceID:      uint32(p.deviceID),
		APIVersion:    uint32(p.apiVersion),
		DriverVersion: uint32(p.driverVersion),
		Limits: Limits{
			MaxStorageBufferRange:               uint64(l.maxStorageBufferRange),
			MaxUniformBufferRange:               uint64(l.maxUniformBufferRange),
			MinStorageBufferOffsetAlignment:     uint64(l.minStorageBufferOffsetAlignment),
			MinUniformBufferOffsetAlignment:     uint64(l.minUniformBufferOffsetAlignment),
			MaxComputeWorkGroupInvocations:      uint32(l.maxComputeWorkGroupInvocations),
			MaxPushConstantsSize:                uint32(l.maxPushConstantsSize),
			MaxPerStageDescriptorStorageBuffers: uint32(l.maxPerStageDescriptorStorageBuffers),
			MaxPerStageDescriptorUniformBuffers: uint32(l.maxPerStageDescriptorUniformBuffers),
			MaxViewportDimensions:               [2]uint32{uint32(l.maxViewportDimensions[0]), uint32(l.maxViewportDimensions[1])},
			TimestampPeriod:                     float32(l.timestampPeriod),
		},
	}
	for i := range 3 {
		out.Limits.MaxComputeWorkGroupCount[i] = uint32(l.maxComputeWorkGroupCount[i])
		out.Limits.MaxComputeWorkGroupSize[i] = uint32(l.maxComputeWorkGroupSize[i])
	}
	for i := range out.PipelineCacheUUID {
		out.PipelineCacheUUID[i] = byte(p.pipelineCacheUUID[i])
	}
	return out
}

// MemoryType is one of VkPhysicalDeviceMemoryProperties' memory types.
type MemoryType struct {
	Flags MemoryPropertyFlags
	Heap  uint32
}

// MemoryProperties calls vkGetPhysicalDeviceMemoryProperties: the memory
// types and the sizes of the heaps.
func MemoryProperties(inst Instance, pd PhysicalDevice) (types []MemoryType, heaps []uint64) {
	var mp C.VkPhysicalDeviceMemoryProperties
	C.vkj_memory_properties(cInstance(inst), cPhys(pd), &mp)
	for i := range min(int(mp.memoryTypeCount), len(mp.memoryTypes)) {
		t := mp.memoryTypes[i]
		types = append(types, MemoryType{MemoryPropertyFlags(t.propertyFlags), uint32(t.heapIndex)})
	}
	for i := range min(int(mp.memoryHeapCount), len(mp.memoryHeaps)) {
		heaps = append(heaps, uint64(mp.memoryHeaps[i].size))
	}
	return types, heaps
}

// RobustBufferAccess reports whether the device has the robustBufferAccess
// feature (vkGetPhysicalDeviceFeatures).
func RobustBufferAccess(inst Instance, pd PhysicalDevice) bool {
	return C.vkj_robust_buffer_access(cInstance(inst), cPhys(pd)) != 0
}

// ScalarBlockLayout reports whether the device has the scalarBlockLayout
// feature (VK_EXT_scalar_block_layout), through
// vkGetPhysicalDeviceFeatures2KHR: call it only on an instance created with
// VK_KHR_get_physical_device_properties2 and for a device that lists
// VK_EXT_scalar_block_layout.
func ScalarBlockLayout(inst Instance, pd PhysicalDevice) bool {
	return C.vkj_scalar_block_layout(cInstance(inst), cPhys(pd)) != 0
}

// Shader type features (ShaderTypeFeatures, CreateDevice's types): the
// VkPhysicalDeviceFeatures that allow the SPIR-V capabilities Float64,
// Int64 and Int16.
const (
	FeatureFloat64 = C.VKJ_FEATURE_FLOAT64
	FeatureInt64   = C.VKJ_FEATURE_INT64
	FeatureInt16   = C.VKJ_FEATURE_INT16
)

// ShaderTypeFeatures reports which of FeatureFloat64, FeatureInt64 and
// FeatureInt16 the device has (vkGetPhysicalDeviceFeatures).
func ShaderTypeFeatures(inst Instance, pd PhysicalDevice) uint32 {
	return uint32(C.vkj_shader_type_features(cInstance(inst), cPhys(pd)))
}

// CreateDevice calls vkCreateDevice: one queue of family qfam, the layers
// and extensions, robustBufferAccess when robust is set,
// scalarBlockLayout when scalar is set (exts must then name
// VK_EXT_scalar_block_layout), and the Feature* bits of types.
func CreateDevice(inst Instance, pd PhysicalDevice, qfam uint32, layers, exts []string, robust, scalar bool, types uint32) (Device, Result) {
	lb, eb := packNames(layers), packNames(exts)
	rb, sb := C.int(0), C.int(0)
	if robust {
		rb = 1
	}
	if scalar {
		sb = 1
	}
	var out C.VkDevice
	r := C.vkj_create_device(cInstance(inst), cPhys(pd), C.uint32_t(qfam), cstr(lb), C.uint32_t(len(layers)),
		cstr(eb), C.uint32_t(len(exts)), rb, sb, C.uint32_t(types), &out)
	return Device(uintptr(unsafe.Pointer(out))), Result(r)
}

// DestroyDeviceWithoutTable calls vkDestroyDevice through
// vkGetInstanceProcAddr, for a device whose table NewDev could not load
// (otherwise use Dev.DestroyDevice). 0 is ignored.
func DestroyDeviceWithoutTable(inst Instance, dev Device) {
	if dev != 0 {
		C.vkj_destroy_device_gipa(cInstance(inst), cDevice(dev))
	}
}

// The device's objects, through its table.

// DestroyDevice calls vkDestroyDevice on the table's device; Free the
// table afterwards.
func (s Dev) DestroyDevice() {
	if s.p != nil {
		C.vkj_destroy_device(s.p)
	}
}

// Queue calls vkGetDeviceQueue.
func (s Dev) Queue(qfam, index uint32) Queue {
	q := C.vkj_device_queue(s.p, C.uint32_t(qfam), C.uint32_t(index))
	return Queue(uintptr(unsafe.Pointer(q)))
}

func (s Dev) destroy(kind C.int, h uint64) {
	if h != 0 {
		C.vkj_dev_destroy(s.p, kind, C.uint64_t(h))
	}
}

// The Destroy methods ignore a 0 handle.
func (s Dev) DestroyBuffer(b Buffer)                 { s.destroy(C.VKJ_DEV_BUFFER, uint64(b)) }
func (s Dev) FreeMemory(m DeviceMemory)              { s.destroy(C.VKJ_DEV_MEMORY, uint64(m)) }
func (s Dev) DestroyCommandPool(p CommandPool)       { s.destroy(C.VKJ_DEV_COMMAND_POOL, uint64(p)) }
func (s Dev) DestroyFence(f Fence)                   { s.destroy(C.VKJ_DEV_FENCE, uint64(f)) }
func (s Dev) DestroyEvent(e Event)                   { s.destroy(C.VKJ_DEV_EVENT, uint64(e)) }
func (s Dev) DestroyDescriptorPool(p DescriptorPool) { s.destroy(C.VKJ_DEV_DESC_POOL, uint64(p)) }
func (s Dev) DestroyQueryPool(p QueryPool)           { s.destroy(C.VKJ_DEV_QUERY_POOL, uint64(p)) }
func (s Dev) DestroyShaderModule(m ShaderModule)     { s.destroy(C.VKJ_DEV_SHADER_MODULE, uint64(m)) }
func (s Dev) DestroySetLayout(l DescriptorSetLayout) { s.destroy(C.VKJ_DEV_SET_LAYOUT, uint64(l)) }
func (s Dev) DestroyPipelineLayout(l PipelineLayout) { s.destroy(C.VKJ_DEV_PIPE_LAYOUT, uint64(l)) }
func (s Dev) DestroyPipeline(p Pipeline)             { s.destroy(C.VKJ_DEV_PIPELINE, uint64(p)) }
func (s Dev) DestroyPipelineCache(c PipelineCache)   { s.destroy(C.VKJ_DEV_PIPE_CACHE, uint64(c)) }

// CreateBuffer calls vkCreateBuffer (exclusive sharing) and
// vkGetBufferMemoryRequirements: the buffer, the size of memory it needs
// and the memory types it allows.
func (s Dev) CreateBuffer(size uint64, usage BufferUsageFlags) (b Buffer, reqSize uint64, typeBits uint32, r Result) {
	var out, rs C.uint64_t
	var tb C.uint32_t
	rr := C.vkj_buffer(s.p, C.uint64_t(size), C.uint32_t(usage), &out, &rs, &tb)
	return Buffer(out), uint64(rs), uint32(tb), Result(rr)
}

// AllocateMemory calls vkAllocateMemory.
func (s Dev) AllocateMemory(size uint64, typeIndex uint32) (DeviceMemory, Result) {
	var out C.uint64_t
	r := C.vkj_memory(s.p, C.uint64_t(size), C.uint32_t(typeIndex), &out)
	return DeviceMemory(out), Result(r)
}

// BindBufferMemory calls vkBindBufferMemory.
func (s Dev) BindBufferMemory(b Buffer, m DeviceMemory, offset uint64) Result {
	return Result(C.vkj_bind_buffer(s.p, C.uint64_t(b), C.uint64_t(m), C.uint64_t(offset)))
}

// MapMemory calls vkMapMemory: size bytes of m from offset, mapped until
// UnmapMemory.
func (s Dev) MapMemory(m DeviceMemory, offset, size uint64) ([]byte, Result) {
	var r C.VkResult
	p := C.vkj_map(s.p, C.uint64_t(m), C.uint64_t(offset), C.uint64_t(size), &r)
	if r != C.VK_SUCCESS || p == nil {
		if r == C.VK_SUCCESS {
			r = C.VK_ERROR_MEMORY_MAP_FAILED
		}
		return nil, Result(r)
	}
	return unsafe.Slice((*byte)(p), size), Success
}

// UnmapMemory calls vkUnmapMemory.
func (s Dev) UnmapMemory(m DeviceMemory) { C.vkj_unmap(s.p, C.uint64_t(m)) }

// CreateCommandPool calls vkCreateCommandPool on family qfam with flags
// (VkCommandPoolCreateFlags).
func (s Dev) CreateCommandPool(qfam, flags uint32) (CommandPool, Result) {
	var out C.uint64_t
	r := C.vkj_dev_command_pool(s.p, C.uint32_t(qfam), C.uint32_t(flags), &out)
	return CommandPool(out), Result(r)
}

// PrimaryCommandBuffer calls vkAllocateCommandBuffers for one primary
// command buffer of pool.
func (s Dev) PrimaryCommandBuffer(pool CommandPool) (CommandBuffer, Result) {
	var cb C.VkCommandBuffer
	r := C.vkj_primary_cb(s.p, C.uint64_t(pool), &cb)
	return CommandBuffer(uintptr(unsafe.Pointer(cb))), Result(r)
}

// CreateFence calls vkCreateFence.
func (s Dev) CreateFence(signaled bool) (Fence, Result) {
	sg := C.int(0)
	if signaled {
		sg = 1
	}
	var out C.uint64_t
	r := C.vkj_dev_fence(s.p, sg, &out)
	return Fence(out), Result(r)
}

// CreateEvent calls vkCreateEvent.
func (s Dev) CreateEvent() (Event, Result) {
	var out C.uint64_t
	r := C.vkj_event(s.p, &out)
	return Event(out), Result(r)
}

// SetEvent calls vkSetEvent; ResetEvent vkResetEvent.
func (s Dev) SetEvent(e Event) Result   { return Result(C.vkj_event_set(s.p, C.uint64_t(e), 1)) }
func (s Dev) ResetEvent(e Event) Result { return Result(C.vkj_event_set(s.p, C.uint64_t(e), 0)) }

// DescriptorPoolSize has the layout of VkDescriptorPoolSize.
type DescriptorPoolSize struct {
	Type  DescriptorType
	Count uint32
}

// CreateDescriptorPool calls vkCreateDescriptorPool.
func (s Dev) CreateDescriptorPool(maxSets uint32, sizes []DescriptorPoolSize) (DescriptorPool, Result) {
	var sp *C.VkDescriptorPoolSize
	if len(sizes) > 0 {
		sp = (*C.VkDescriptorPoolSize)(unsafe.Pointer(&sizes[0]))
	}
	var out C.uint64_t
	r := C.vkj_desc_pool(s.p, C.uint32_t(maxSets), sp, C.uint32_t(len(sizes)), &out)
	return DescriptorPool(out), Result(r)
}

// CreateTimestampPool creates a query pool of count timestamp queries.
func (s Dev) CreateTimestampPool(count uint32) (QueryPool, Result) {
	var out C.uint64_t
	r := C.vkj_timestamp_pool(s.p, C.uint32_t(count), &out)
	return QueryPool(out), Result(r)
}

// CreateShaderModule calls vkCreateShaderModule on SPIR-V bytes (copied
// into words: the bytes need not be 4-aligned). A length that is 0 or not
// a multiple of 4 returns ErrorInitializationFailed without a call.
func (s Dev) CreateShaderModule(code []byte) (ShaderModule, Result) {
	words, ok := spirvWords(code)
	if !ok {
		return 0, ErrorInitializationFailed
	}
	var out C.uint64_t
	r := C.vkj_dev_shader_module(s.p, (*C.uint32_t)(unsafe.Pointer(&words[0])), C.size_t(len(code)), &out)
	return ShaderModule(out), Result(r)
}

// spirvWords copies SPIR-V bytes into words.
func spirvWords(code []byte) ([]uint32, bool) {
	if len(code) == 0 || len(code)%4 != 0 {
		return nil, false
	}
	words := make([]uint32, len(code)/4)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(code)), code)
	return words, true
}

// SetLayoutBinding is one binding of a descriptor set layout (layout of
// vkj_binding).
type SetLayoutBinding struct {
	Binding uint32
	Type    DescriptorType
	Count   uint32
	Stages  ShaderStageFlags
}

// MaxBindings is the most bindings CreateSetLayout takes.
const MaxBindings = C.VKJ_MAX_BINDINGS

// CreateSetLayout calls vkCreateDescriptorSetLayout. More than MaxBindings
// bindings return ErrorTooManyObjects.
func (s Dev) CreateSetLayout(b []SetLayoutBinding) (DescriptorSetLayout, Result) {
	var bp *C.vkj_binding
	if len(b) > 0 {
		bp = (*C.vkj_binding)(unsafe.Pointer(&b[0]))
	}
	var out C.uint64_t
	r := C.vkj_set_layout(s.p, bp, C.uint32_t(len(b)), &out)
	return DescriptorSetLayout(out), Result(r)
}

// CreatePipelineLayout calls vkCreatePipelineLayout with one set layout
// and push constants [0, pcSize) for pcStages.
func (s Dev) CreatePipelineLayout(set DescriptorSetLayout, pcStages ShaderStageFlags, pcSize uint32) (PipelineLayout, Result) {
	var out C.uint64_t
	r := C.vkj_pipe_layout(s.p, C.uint64_t(set), C.uint32_t(pcStages), C.uint32_t(pcSize), &out)
	return PipelineLayout(out), Result(r)
}

// CreatePipelineCache calls vkCreatePipelineCache seeded with data (may be
// empty).
func (s Dev) CreatePipelineCache(data []byte) (PipelineCache, Result) {
	var dp unsafe.Pointer
	if len(data) > 0 {
		dp = unsafe.Pointer(&data[0])
	}
	var out C.uint64_t
	r := C.vkj_pipe_cache(s.p, dp, C.size_t(len(data)), &out)
	return PipelineCache(out), Result(r)
}

// PipelineCacheData calls vkGetPipelineCacheData twice (size, then data).
func (s Dev) PipelineCacheData(c PipelineCache) ([]byte, Result) {
	var n C.size_t
	if r := C.vkj_pipe_cache_data(s.p, C.uint64_t(c), &n, nil); r != C.VK_SUCCESS || n == 0 {
		return nil, Result(r)
	}
	buf := make([]byte, n)
	r := C.vkj_pipe_cache_data(s.p, C.uint64_t(c), &n, unsafe.Pointer(&buf[0]))
	if r != C.VK_SUCCESS && r != C.VK_INCOMPLETE {
		return nil, Result(r)
	}
	return buf[:n], Success
}

// Layout checks against the C structs.
var (
	_ [unsafe.Sizeof(C.VkDescriptorPoolSize{}) - unsafe.Sizeof(DescriptorPoolSize{})]struct{}
	_ [unsafe.Sizeof(DescriptorPoolSize{}) - unsafe.Sizeof(C.VkDescriptorPoolSize{})]struct{}
	_ [unsafe.Sizeof(C.vkj_binding{}) - unsafe.Sizeof(SetLayoutBinding{})]struct{}
	_ [unsafe.Sizeof(SetLayoutBinding{}) - unsafe.Sizeof(C.vkj_binding{})]struct{}
	_ [unsafe.Sizeof(C.VkInstance(nil)) - unsafe.Sizeof(Instance(0))]struct{}
	_ [unsafe.Sizeof(Instance(0)) - unsafe.Sizeof(C.VkInstance(nil))]struct{}
)
