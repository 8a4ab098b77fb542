package gpu

// This file is the Go half of the C shim (shim.c, shim.h).
//
// Why a shim beside vulkan-go: the binding copies every struct passed by
// pointer into C memory that leaks until its Free method is called, and it
// copies slices of structs (QueueSubmit's SubmitInfos, UpdateDescriptorSets'
// writes, CmdPipelineBarrier's barriers, CmdCopyBuffer's regions,
// CreateComputePipelines' infos, queue family properties) into C memory that
// a finalizer frees. That finalizer is attached to a temporary which is dead
// as soon as the helper returns, so a garbage collection during the C call
// may free the array while Vulkan reads it (see unpackArgS* in the binding's
// cgo_helpers.go), and on a hot path it is C allocation per call.
// The shim builds those structs on the C stack instead and calls the
// device's functions through pointers fetched once with vkGetDeviceProcAddr.
// Everything else (creation and destruction of objects, with explicit
// Free of every info struct) goes through vulkan-go.
//
// The shim also dlopens the runtime loader libvulkan.so.1 itself (the
// binding's default looks for libvulkan.so, which only the -dev package
// installs) and routes VK_EXT_debug_report messages to Go: vulkan-go
// cannot pass a C function pointer as the callback.
//
// Validation messages become errors, never crashes. The layer reports from
// the thread that made the call, so the C callback counts error messages
// per OS thread (vkj_capture_*): pipeline creation runs locked to its
// thread and fails with ErrValidation when the layer objected, so that an
// invalid pipeline is never bound (the layer itself may crash in
// vkCmdDispatch on a pipeline whose shader uses a binding its layout lacks:
// VUID-VkComputePipelineCreateInfo-layout-00703, then a NULL dereference
// after VUID-vkCmdDispatch-None-02699); the submitter goroutine records on
// one locked thread, and a command buffer whose recording drew an error
// message is not submitted: its tasks fail with ErrValidation.

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	vk "github.com/vulkan-go/vulkan"
)

// Handle conversions. vulkan-go's non-dispatchable handles are C pointer
// types (incomplete structs, so generics cannot abstract over them); the
// shim takes them as uint64.
func ptrU64(p unsafe.Pointer) C.uint64_t { return C.uint64_t(uintptr(p)) }

func hBuffer(h vk.Buffer) C.uint64_t                 { return ptrU64(unsafe.Pointer(h)) }
func hFence(h vk.Fence) C.uint64_t                   { return ptrU64(unsafe.Pointer(h)) }
func hCommandPool(h vk.CommandPool) C.uint64_t       { return ptrU64(unsafe.Pointer(h)) }
func hDescriptorPool(h vk.DescriptorPool) C.uint64_t { return ptrU64(unsafe.Pointer(h)) }
func hQueryPool(h vk.QueryPool) C.uint64_t           { return ptrU64(unsafe.Pointer(h)) }
func hSetLayout(h vk.DescriptorSetLayout) C.uint64_t { return ptrU64(unsafe.Pointer(h)) }
func hPipeLayout(h vk.PipelineLayout) C.uint64_t     { return ptrU64(unsafe.Pointer(h)) }
func hPipeCache(h vk.PipelineCache) C.uint64_t       { return ptrU64(unsafe.Pointer(h)) }
func hModule(h vk.ShaderModule) C.uint64_t           { return ptrU64(unsafe.Pointer(h)) }

// bufferU64 is a buffer handle as a plain uint64 (for descWrite).
func bufferU64(h vk.Buffer) uint64 { return uint64(uintptr(unsafe.Pointer(h))) }

// pipelineOf converts a pipeline handle made by the shim back to vulkan-go.
func pipelineOf(u uint64) vk.Pipeline { return *(*vk.Pipeline)(unsafe.Pointer(&u)) }

func cmdBuf(cb vk.CommandBuffer) C.VkCommandBuffer { return C.VkCommandBuffer(unsafe.Pointer(cb)) }
func cQueue(q vk.Queue) C.VkQueue                  { return C.VkQueue(unsafe.Pointer(q)) }
func cInstance(i vk.Instance) C.VkInstance         { return C.VkInstance(unsafe.Pointer(i)) }
func cDevice(d vk.Device) C.VkDevice               { return C.VkDevice(unsafe.Pointer(d)) }
func cPhys(p vk.PhysicalDevice) C.VkPhysicalDevice { return C.VkPhysicalDevice(unsafe.Pointer(p)) }

var (
	loaderOnce sync.Once
	loaderErr  error
)

// loadVulkan dlopens the loader and initialises vulkan-go's global function
// pointers once per process.
func loadVulkan() error {
	loaderOnce.Do(func() {
		if C.vkj_load() != 0 {
			loaderErr = fmt.Errorf("%w: cannot load the Vulkan loader (libvulkan.so.1: %s); %s",
				ErrNoDevice, C.GoString(C.vkj_load_error()), installHint)
			return
		}
		vk.SetGetInstanceProcAddr(C.vkj_gipa())
		if err := vk.Init(); err != nil {
			loaderErr = fmt.Errorf("%w: vulkan-go Init: %v; %s", ErrNoDevice, err, installHint)
		}
	})
	return loaderErr
}

// gipa returns the process's vkGetInstanceProcAddr (nil before
// loadVulkan succeeded): the one function loader, shared with package
// gpu/gfx through gpu/internal/devhook.
func gipa() unsafe.Pointer { return C.vkj_gipa() }

// hasInstanceLayer reports whether the loader knows the instance layer.
func hasInstanceLayer(name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.vkj_has_instance_layer(cn) != 0
}

func hasInstanceExtension(name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.vkj_has_instance_extension(cn) != 0
}

func hasDeviceExtension(inst vk.Instance, pd vk.PhysicalDevice, name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.vkj_has_device_extension(cInstance(inst), cPhys(pd), cn) != 0
}

// queueFamily is one queue family's properties.
type queueFamily struct {
	Flags          uint32
	Count          uint32
	TimestampValid uint32
}

func queueFamilies(inst vk.Instance, pd vk.PhysicalDevice) []queueFamily {
	var buf [64]C.vkj_qfam
	n := C.vkj_queue_families(cInstance(inst), cPhys(pd), &buf[0], 64)
	out := make([]queueFamily, n)
	for i := range out {
		out[i] = queueFamily{uint32(buf[i].flags), uint32(buf[i].count), uint32(buf[i].timestamp_bits)}
	}
	return out
}

// Debug-report routing: the C callback passes back the user value given at
// registration; it indexes debugSinks.
var (
	debugMu    sync.Mutex
	debugSinks = map[uintptr]*messageLog{}
	debugNext  uintptr
)

func registerSink(m *messageLog) uintptr {
	debugMu.Lock()
	defer debugMu.Unlock()
	debugNext++
	debugSinks[debugNext] = m
	return debugNext
}

func unregisterSink(id uintptr) {
	debugMu.Lock()
	delete(debugSinks, id)
	debugMu.Unlock()
}

//export vkjGoDebugReport
func vkjGoDebugReport(user C.uintptr_t, flags C.uint32_t, code C.int32_t, layer *C.char, msg *C.char) {
	debugMu.Lock()
	m := debugSinks[uintptr(user)]
	debugMu.Unlock()
	if m == nil {
		return
	}
	m.add(Message{Severity: severityOf(uint32(flags)), Code: int32(code), Layer: C.GoString(layer), Text: C.GoString(msg)})
}

// dev is the per-device function table of the shim (C memory).
type shimDev struct {
	p *C.vkj_dev
}

func newShimDev(inst vk.Instance, dev vk.Device) (shimDev, error) {
	p := C.vkj_dev_new()
	if p == nil {
		return shimDev{}, fmt.Errorf("gpu: calloc of the device function table failed: %w", ErrOutOfMemory)
	}
	if missing := C.vkj_dev_init(p, cInstance(inst), cDevice(dev)); missing != nil {
		name := C.GoString(missing)
		C.vkj_dev_free(p)
		return shimDev{}, fmt.Errorf("gpu: vkGetDeviceProcAddr(%s) returned NULL: %w", name, ErrNoDevice)
	}
	return shimDev{p}, nil
}

func (s shimDev) free() {
	if s.p != nil {
		C.vkj_dev_free(s.p)
	}
}

// bufferCopy has the layout of VkBufferCopy.
type bufferCopy struct {
	Src, Dst, Size uint64
}

// descWrite has the layout of vkj_desc.
type descWrite struct {
	Buffer uint64
	Offset uint64
	Range  uint64
	Bind   uint32
	Type   uint32
}

// Compile-time layout checks against the C structs.
var (
	_ [unsafe.Sizeof(C.VkBufferCopy{}) - unsafe.Sizeof(bufferCopy{})]struct{}
	_ [unsafe.Sizeof(bufferCopy{}) - unsafe.Sizeof(C.VkBufferCopy{})]struct{}
	_ [unsafe.Sizeof(C.vkj_desc{}) - unsafe.Sizeof(descWrite{})]struct{}
	_ [unsafe.Sizeof(descWrite{}) - unsafe.Sizeof(C.vkj_desc{})]struct{}
)

// The hot-path calls. Pointer arguments point into long-lived Go arrays
// (slot fields) that hold no Go pointers, so passing them allocates nothing.

func (s shimDev) slotReset(fence vk.Fence, cmdPool vk.CommandPool, descPool vk.DescriptorPool) Result {
	return Result(C.vkj_slot_reset(s.p, hFence(fence), hCommandPool(cmdPool), hDescriptorPool(descPool)))
}

func (s shimDev) begin(cb vk.CommandBuffer) Result { return Result(C.vkj_begin(s.p, cmdBuf(cb))) }
func (s shimDev) end(cb vk.CommandBuffer) Result   { return Result(C.vkj_end(s.p, cmdBuf(cb))) }

func (s shimDev) submit(q vk.Queue, cb vk.CommandBuffer, fence vk.Fence) Result {
	return Result(C.vkj_submit(s.p, cQueue(q), cmdBuf(cb), hFence(fence)))
}

func (s shimDev) wait(fence vk.Fence, timeoutNS uint64) Result {
	return Result(C.vkj_wait(s.p, hFence(fence), C.uint64_t(timeoutNS)))
}

func (s shimDev) queueIdle(q vk.Queue) Result { return Result(C.vkj_queue_idle(s.p, cQueue(q))) }

func (s shimDev) resetQueries(cb vk.CommandBuffer, pool vk.QueryPool, first, n uint32) {
	C.vkj_reset_queries(s.p, cmdBuf(cb), hQueryPool(pool), C.uint32_t(first), C.uint32_t(n))
}

func (s shimDev) timestamp(cb vk.CommandBuffer, stage vk.PipelineStageFlagBits, pool vk.QueryPool, q uint32) {
	C.vkj_timestamp(s.p, cmdBuf(cb), C.uint32_t(stage), hQueryPool(pool), C.uint32_t(q))
}

func (s shimDev) barrier(cb vk.CommandBuffer, srcStage, dstStage vk.PipelineStageFlagBits, srcAccess, dstAccess vk.AccessFlagBits) {
	C.vkj_barrier(s.p, cmdBuf(cb), C.uint32_t(srcStage), C.uint32_t(dstStage), C.uint32_t(srcAccess), C.uint32_t(dstAccess))
}

func (s shimDev) copy(cb vk.CommandBuffer, src, dst vk.Buffer, regions []bufferCopy) {
	if len(regions) == 0 {
		return
	}
	C.vkj_copy(s.p, cmdBuf(cb), hBuffer(src), hBuffer(dst), (*C.VkBufferCopy)(unsafe.Pointer(&regions[0])), C.uint32_t(len(regions)))
}

func (s shimDev) set(pool vk.DescriptorPool, layout vk.DescriptorSetLayout, w []descWrite, out *uint64) Result {
	var wp *C.vkj_desc
	if len(w) > 0 {
		wp = (*C.vkj_desc)(unsafe.Pointer(&w[0]))
	}
	return Result(C.vkj_set(s.p, hDescriptorPool(pool), hSetLayout(layout), wp, C.uint32_t(len(w)), (*C.uint64_t)(unsafe.Pointer(out))))
}

func (s shimDev) dispatch(cb vk.CommandBuffer, pipe uint64, layout vk.PipelineLayout, set uint64, params *[8]uint32,
	begin, end uint32, itemsPerGroup uint64, maxGroups uint32, qpool vk.QueryPool, q int32, stage0, stage1 vk.PipelineStageFlagBits) {
	C.vkj_dispatch(s.p, cmdBuf(cb), C.uint64_t(pipe), hPipeLayout(layout), C.uint64_t(set),
		(*C.uint32_t)(unsafe.Pointer(&params[0])), C.uint32_t(begin), C.uint32_t(end),
		C.uint64_t(itemsPerGroup), C.uint32_t(maxGroups), hQueryPool(qpool), C.int32_t(q), C.uint32_t(stage0), C.uint32_t(stage1))
}

func (s shimDev) waitEvent(cb vk.CommandBuffer, ev vk.Event) {
	C.vkj_wait_event(s.p, cmdBuf(cb), ptrU64(unsafe.Pointer(ev)))
}

func (s shimDev) queries(pool vk.QueryPool, first, n uint32, out []uint64) Result {
	if n == 0 {
		return Success
	}
	return Result(C.vkj_queries(s.p, hQueryPool(pool), C.uint32_t(first), C.uint32_t(n), (*C.uint64_t)(unsafe.Pointer(&out[0]))))
}

func (s shimDev) computePipeline(cache vk.PipelineCache, module vk.ShaderModule, layout vk.PipelineLayout, entry string, local uint32) (uint64, Result) {
	ce := C.CString(entry)
	defer C.free(unsafe.Pointer(ce))
	var out C.uint64_t
	r := C.vkj_compute_pipeline(s.p, hPipeCache(cache), hModule(module), hPipeLayout(layout), ce, C.uint32_t(local), &out)
	return uint64(out), Result(r)
}

// debug-report helpers.

// captureReset starts counting the error messages reported on this OS
// thread (the caller holds runtime.LockOSThread).
func captureReset() { C.vkj_capture_reset() }

// captured returns the error messages reported on this OS thread since
// captureReset: their count and the first one.
func captured() (int, string) {
	n := int(C.vkj_capture_errors())
	if n == 0 {
		return 0, ""
	}
	return n, C.GoString(C.vkj_capture_msg())
}

func debugChainInfo(flags uint32, user uintptr) unsafe.Pointer {
	return C.vkj_debug_chain_info(C.uint32_t(flags), C.uintptr_t(user))
}

func cFree(p unsafe.Pointer) { C.vkj_free(p) }

func debugCreate(inst vk.Instance, flags uint32, user uintptr) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_debug_create(cInstance(inst), C.uint32_t(flags), C.uintptr_t(user), &out)
	return uint64(out), Result(r)
}

func debugDestroy(inst vk.Instance, cb uint64) { C.vkj_debug_destroy(cInstance(inst), C.uint64_t(cb)) }
