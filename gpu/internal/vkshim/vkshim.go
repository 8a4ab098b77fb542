// Package vkshim is the one package of the project that uses cgo to reach
// Vulkan: it dlopens the loader (libvulkan.so.1) once, holds the process's
// one vkGetInstanceProcAddr (GIPA; vulkan-go is initialised with it by
// package gpu), and wraps two C function tables loaded through it: the
// compute table (Dev, shim.c, used by package gpu) and the graphics table
// (Gfx, gfx_shim.c, used by package gpu/gfx). Every function returns the
// call's VkResult as a Result; packages gpu and gfx turn a failure into an
// error naming the call (*gpu.VkError). Being internal, nothing here is
// public API.
//
// Why a shim beside vulkan-go (package gpu uses the binding for object
// creation): the binding copies every struct passed by
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
// thread and fails with gpu.ErrValidation when the layer objected, so that an
// invalid pipeline is never bound (the layer itself may crash in
// vkCmdDispatch on a pipeline whose shader uses a binding its layout lacks:
// VUID-VkComputePipelineCreateInfo-layout-00703, then a NULL dereference
// after VUID-vkCmdDispatch-None-02699); the submitter goroutine records on
// one locked thread, and a command buffer whose recording drew an error
// message is not submitted: its tasks fail with gpu.ErrValidation.
package vkshim

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
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

// BufferU64 is a buffer handle as a plain uint64 (for DescWrite and the
// graphics table).
func BufferU64(h vk.Buffer) uint64 { return uint64(uintptr(unsafe.Pointer(h))) }

// PipelineOf converts a pipeline handle made by the shim back to vulkan-go.
func PipelineOf(u uint64) vk.Pipeline { return *(*vk.Pipeline)(unsafe.Pointer(&u)) }

func cmdBuf(cb vk.CommandBuffer) C.VkCommandBuffer { return C.VkCommandBuffer(unsafe.Pointer(cb)) }
func cQueue(q vk.Queue) C.VkQueue                  { return C.VkQueue(unsafe.Pointer(q)) }
func cInstance(i vk.Instance) C.VkInstance         { return C.VkInstance(unsafe.Pointer(i)) }
func cDevice(d vk.Device) C.VkDevice               { return C.VkDevice(unsafe.Pointer(d)) }
func cPhys(p vk.PhysicalDevice) C.VkPhysicalDevice { return C.VkPhysicalDevice(unsafe.Pointer(p)) }

// Result is a VkResult as the C functions return it (package gpu's Result
// names them).
type Result int32

// The results this package produces itself or its callers test for
// (values of the Vulkan specification; package gpu names them all).
const (
	Success                   Result = 0
	NotReady                  Result = 1
	Timeout                   Result = 2
	ErrorInitializationFailed Result = -3
	ErrorDeviceLost           Result = -4
	ErrorTooManyObjects       Result = -10
	SuboptimalKHR             Result = 1000001003
	ErrorOutOfDateKHR         Result = -1000001004
)

var (
	loaderOnce sync.Once
	loaderMsg  string
)

// Load dlopens the runtime loader libvulkan.so.1 once per process. It
// returns "" on success, else why the loader could not be loaded.
func Load() string {
	loaderOnce.Do(func() {
		if C.vkj_load() != 0 {
			loaderMsg = C.GoString(C.vkj_load_error())
			if loaderMsg == "" {
				loaderMsg = "unknown error"
			}
		}
	})
	return loaderMsg
}

// GIPA returns the process's vkGetInstanceProcAddr (nil before Load
// succeeded): the one function loader. vulkan-go and both C tables get
// their functions through it.
func GIPA() unsafe.Pointer { return C.vkj_gipa() }

// HasInstanceLayer reports whether the loader knows the instance layer.
func HasInstanceLayer(name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.vkj_has_instance_layer(cn) != 0
}

func HasInstanceExtension(name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.vkj_has_instance_extension(cn) != 0
}

func HasDeviceExtension(inst vk.Instance, pd vk.PhysicalDevice, name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.vkj_has_device_extension(cInstance(inst), cPhys(pd), cn) != 0
}

// QueueFamily is one queue family's properties.
type QueueFamily struct {
	Flags          uint32
	Count          uint32
	TimestampValid uint32
}

func QueueFamilies(inst vk.Instance, pd vk.PhysicalDevice) []QueueFamily {
	var buf [64]C.vkj_qfam
	n := C.vkj_queue_families(cInstance(inst), cPhys(pd), &buf[0], 64)
	out := make([]QueueFamily, n)
	for i := range out {
		out[i] = QueueFamily{uint32(buf[i].flags), uint32(buf[i].count), uint32(buf[i].timestamp_bits)}
	}
	return out
}

// DebugReport receives the VK_EXT_debug_report messages with the user
// value given to DebugChainInfo or DebugCreate. Package gpu sets it once,
// before creating any instance.
var DebugReport func(user uintptr, flags uint32, code int32, layer, msg string)

//export vkjGoDebugReport
func vkjGoDebugReport(user C.uintptr_t, flags C.uint32_t, code C.int32_t, layer *C.char, msg *C.char) {
	if f := DebugReport; f != nil {
		f(uintptr(user), uint32(flags), int32(code), C.GoString(layer), C.GoString(msg))
	}
}

// Dev is the compute function table of one device (C memory).
type Dev struct {
	p *C.vkj_dev
}

// NewDev loads the compute functions of dev. On failure ok is false and
// missing names the function vkGetDeviceProcAddr did not return, or is
// empty when the table could not be allocated.
func NewDev(inst vk.Instance, dev vk.Device) (d Dev, missing string, ok bool) {
	p := C.vkj_dev_new()
	if p == nil {
		return Dev{}, "", false
	}
	if m := C.vkj_dev_init(p, cInstance(inst), cDevice(dev)); m != nil {
		name := C.GoString(m)
		C.vkj_dev_free(p)
		return Dev{}, name, false
	}
	return Dev{p}, "", true
}

// Free frees the table (not the objects made through it).
func (s Dev) Free() {
	if s.p != nil {
		C.vkj_dev_free(s.p)
	}
}

// BufferCopy has the layout of VkBufferCopy.
type BufferCopy struct {
	Src, Dst, Size uint64
}

// DescWrite has the layout of vkj_desc.
type DescWrite struct {
	Buffer uint64
	Offset uint64
	Range  uint64
	Bind   uint32
	Type   uint32
}

// Compile-time layout checks against the C structs.
var (
	_ [unsafe.Sizeof(C.VkBufferCopy{}) - unsafe.Sizeof(BufferCopy{})]struct{}
	_ [unsafe.Sizeof(BufferCopy{}) - unsafe.Sizeof(C.VkBufferCopy{})]struct{}
	_ [unsafe.Sizeof(C.vkj_desc{}) - unsafe.Sizeof(DescWrite{})]struct{}
	_ [unsafe.Sizeof(DescWrite{}) - unsafe.Sizeof(C.vkj_desc{})]struct{}
)

// The hot-path calls. Pointer arguments point into long-lived Go arrays
// (slot fields) that hold no Go pointers, so passing them allocates nothing.

func (s Dev) SlotReset(fence vk.Fence, cmdPool vk.CommandPool, descPool vk.DescriptorPool) Result {
	return Result(C.vkj_slot_reset(s.p, hFence(fence), hCommandPool(cmdPool), hDescriptorPool(descPool)))
}

func (s Dev) Begin(cb vk.CommandBuffer) Result { return Result(C.vkj_begin(s.p, cmdBuf(cb))) }
func (s Dev) End(cb vk.CommandBuffer) Result   { return Result(C.vkj_end(s.p, cmdBuf(cb))) }

func (s Dev) Submit(q vk.Queue, cb vk.CommandBuffer, fence vk.Fence) Result {
	return Result(C.vkj_submit(s.p, cQueue(q), cmdBuf(cb), hFence(fence)))
}

func (s Dev) Wait(fence vk.Fence, timeoutNS uint64) Result {
	return Result(C.vkj_wait(s.p, hFence(fence), C.uint64_t(timeoutNS)))
}

func (s Dev) QueueIdle(q vk.Queue) Result { return Result(C.vkj_queue_idle(s.p, cQueue(q))) }

func (s Dev) ResetQueries(cb vk.CommandBuffer, pool vk.QueryPool, first, n uint32) {
	C.vkj_reset_queries(s.p, cmdBuf(cb), hQueryPool(pool), C.uint32_t(first), C.uint32_t(n))
}

func (s Dev) Timestamp(cb vk.CommandBuffer, stage vk.PipelineStageFlagBits, pool vk.QueryPool, q uint32) {
	C.vkj_timestamp(s.p, cmdBuf(cb), C.uint32_t(stage), hQueryPool(pool), C.uint32_t(q))
}

func (s Dev) Barrier(cb vk.CommandBuffer, srcStage, dstStage vk.PipelineStageFlagBits, srcAccess, dstAccess vk.AccessFlagBits) {
	C.vkj_barrier(s.p, cmdBuf(cb), C.uint32_t(srcStage), C.uint32_t(dstStage), C.uint32_t(srcAccess), C.uint32_t(dstAccess))
}

func (s Dev) Copy(cb vk.CommandBuffer, src, dst vk.Buffer, regions []BufferCopy) {
	if len(regions) == 0 {
		return
	}
	C.vkj_copy(s.p, cmdBuf(cb), hBuffer(src), hBuffer(dst), (*C.VkBufferCopy)(unsafe.Pointer(&regions[0])), C.uint32_t(len(regions)))
}

func (s Dev) Set(pool vk.DescriptorPool, layout vk.DescriptorSetLayout, w []DescWrite, out *uint64) Result {
	var wp *C.vkj_desc
	if len(w) > 0 {
		wp = (*C.vkj_desc)(unsafe.Pointer(&w[0]))
	}
	return Result(C.vkj_set(s.p, hDescriptorPool(pool), hSetLayout(layout), wp, C.uint32_t(len(w)), (*C.uint64_t)(unsafe.Pointer(out))))
}

func (s Dev) Dispatch(cb vk.CommandBuffer, pipe uint64, layout vk.PipelineLayout, set uint64, params *[8]uint32,
	begin, end uint32, itemsPerGroup uint64, maxGroups uint32, qpool vk.QueryPool, q int32, stage0, stage1 vk.PipelineStageFlagBits) {
	C.vkj_dispatch(s.p, cmdBuf(cb), C.uint64_t(pipe), hPipeLayout(layout), C.uint64_t(set),
		(*C.uint32_t)(unsafe.Pointer(&params[0])), C.uint32_t(begin), C.uint32_t(end),
		C.uint64_t(itemsPerGroup), C.uint32_t(maxGroups), hQueryPool(qpool), C.int32_t(q), C.uint32_t(stage0), C.uint32_t(stage1))
}

func (s Dev) WaitEvent(cb vk.CommandBuffer, ev vk.Event) {
	C.vkj_wait_event(s.p, cmdBuf(cb), ptrU64(unsafe.Pointer(ev)))
}

func (s Dev) Queries(pool vk.QueryPool, first, n uint32, out []uint64) Result {
	if n == 0 {
		return Success
	}
	return Result(C.vkj_queries(s.p, hQueryPool(pool), C.uint32_t(first), C.uint32_t(n), (*C.uint64_t)(unsafe.Pointer(&out[0]))))
}

func (s Dev) ComputePipeline(cache vk.PipelineCache, module vk.ShaderModule, layout vk.PipelineLayout, entry string, local uint32) (uint64, Result) {
	ce := C.CString(entry)
	defer C.free(unsafe.Pointer(ce))
	var out C.uint64_t
	r := C.vkj_compute_pipeline(s.p, hPipeCache(cache), hModule(module), hPipeLayout(layout), ce, C.uint32_t(local), &out)
	return uint64(out), Result(r)
}

// Debug-report helpers.

// CaptureReset starts counting the error messages reported on this OS
// thread (the caller holds runtime.LockOSThread).
func CaptureReset() { C.vkj_capture_reset() }

// Captured returns the error messages reported on this OS thread since
// CaptureReset: their count and the first one.
func Captured() (int, string) {
	n := int(C.vkj_capture_errors())
	if n == 0 {
		return 0, ""
	}
	return n, C.GoString(C.vkj_capture_msg())
}

// DebugChainInfo returns a VkDebugReportCallbackCreateInfoEXT (C memory,
// free with Free) for an instance's pNext chain.
func DebugChainInfo(flags uint32, user uintptr) unsafe.Pointer {
	return C.vkj_debug_chain_info(C.uint32_t(flags), C.uintptr_t(user))
}

// Free frees C memory returned by DebugChainInfo.
func Free(p unsafe.Pointer) { C.vkj_free(p) }

// DebugCreate creates a debug-report callback on inst.
func DebugCreate(inst vk.Instance, flags uint32, user uintptr) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_debug_create(cInstance(inst), C.uint32_t(flags), C.uintptr_t(user), &out)
	return uint64(out), Result(r)
}

// DebugDestroy destroys a callback made by DebugCreate.
func DebugDestroy(inst vk.Instance, cb uint64) { C.vkj_debug_destroy(cInstance(inst), C.uint64_t(cb)) }
