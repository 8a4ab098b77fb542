// Package vkshim is the project's one binding to Vulkan and the one
// package that uses cgo. It dlopens the loader (libvulkan.so.1) once,
// holds the process's one vkGetInstanceProcAddr (GIPA), and reaches every
// Vulkan function through it: instance-level functions directly, and
// device-level ones through two C function tables filled once per device
// with vkGetDeviceProcAddr (so calls go straight to the driver or the
// layers), the compute table (Dev: shim.c and obj.c, used by package gpu)
// and the graphics table (Gfx: gfx_shim.c, used by package gpu/gfx).
// Every call returns its VkResult as a Result; packages gpu and gfx turn a
// failure into an error naming the call (*gpu.VkError). It also defines
// the handle types and the constants those packages use (vk.go; they
// import it as vk). Being internal, nothing here is public API.
//
// Every C function takes plain values, handles, and pointers to plain
// arrays owned by the caller (Go arrays that hold no Go pointers); the
// create-info structs and the arrays Vulkan reads are built on the C
// stack. So no struct a Vulkan call reads lives in C heap memory, nothing
// must be freed after a call, and the hot paths (record, submit, wait)
// allocate nothing at all. (C heap memory is used only for the function
// tables, freed by Free, and briefly at set-up by the layer and extension
// queries.)
// Handles cross as integers: dispatchable ones as uintptr, the others as
// uint64 (their ABI on every 64-bit platform).
//
// Rejected alternative: a generated binding such as vulkan-go
// (github.com/vulkan-go/vulkan), which the project used for object
// creation until this package took every call over. That binding copies
// every struct passed by pointer into C memory that leaks until its Free
// method is called, and it copies slices of structs (QueueSubmit's
// SubmitInfos, UpdateDescriptorSets' writes, CmdPipelineBarrier's
// barriers, CmdCopyBuffer's regions, CreateComputePipelines' infos, queue
// family properties) into C memory that a finalizer frees. That finalizer
// is attached to a temporary which is dead as soon as the helper returns,
// so a garbage collection during the C call may free the array while
// Vulkan reads it (see unpackArgS* in the binding's cgo_helpers.go), and
// on a hot path it is C allocation per call. Its default loader looks for
// libvulkan.so, which only the -dev package installs, and it cannot pass a
// C function pointer as the debug-report callback. Using it beside this
// package also meant two ways to reach Vulkan, with two sets of function
// pointers. The project calls about a hundred Vulkan functions; writing their
// C wrappers by hand replaced the rules the binding required (Deref of
// returned structs, Free of every info struct, NUL-terminated strings)
// with plain C that the compiler checks against the Vulkan headers.
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
)

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

func HasDeviceExtension(inst Instance, pd PhysicalDevice, name string) bool {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return C.vkj_has_device_extension(cInstance(inst), cPhys(pd), cn) != 0
}

// QueueFamily is one queue family's properties.
type QueueFamily struct {
	Flags          QueueFlags
	Count          uint32
	TimestampValid uint32
}

func QueueFamilies(inst Instance, pd PhysicalDevice) []QueueFamily {
	var buf [64]C.vkj_qfam
	n := C.vkj_queue_families(cInstance(inst), cPhys(pd), &buf[0], 64)
	out := make([]QueueFamily, n)
	for i := range out {
		out[i] = QueueFamily{QueueFlags(buf[i].flags), uint32(buf[i].count), uint32(buf[i].timestamp_bits)}
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
func NewDev(inst Instance, dev Device) (d Dev, missing string, ok bool) {
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
	Buffer Buffer
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

func (s Dev) SlotReset(fence Fence, cmdPool CommandPool, descPool DescriptorPool) Result {
	return Result(C.vkj_slot_reset(s.p, C.uint64_t(fence), C.uint64_t(cmdPool), C.uint64_t(descPool)))
}

func (s Dev) Begin(cb CommandBuffer) Result { return Result(C.vkj_begin(s.p, cmdBuf(cb))) }

// BeginReuse begins cb for submission more than once (no ONE_TIME_SUBMIT).
func (s Dev) BeginReuse(cb CommandBuffer) Result { return Result(C.vkj_begin_reuse(s.p, cmdBuf(cb))) }

func (s Dev) End(cb CommandBuffer) Result { return Result(C.vkj_end(s.p, cmdBuf(cb))) }

func (s Dev) Submit(q Queue, cb CommandBuffer, fence Fence) Result {
	return Result(C.vkj_submit(s.p, cQueue(q), cmdBuf(cb), C.uint64_t(fence)))
}

func (s Dev) Wait(fence Fence, timeoutNS uint64) Result {
	return Result(C.vkj_wait(s.p, C.uint64_t(fence), C.uint64_t(timeoutNS)))
}

func (s Dev) QueueIdle(q Queue) Result { return Result(C.vkj_queue_idle(s.p, cQueue(q))) }

func (s Dev) ResetQueries(cb CommandBuffer, pool QueryPool, first, n uint32) {
	C.vkj_reset_queries(s.p, cmdBuf(cb), C.uint64_t(pool), C.uint32_t(first), C.uint32_t(n))
}

func (s Dev) Timestamp(cb CommandBuffer, stage PipelineStageFlags, pool QueryPool, q uint32) {
	C.vkj_timestamp(s.p, cmdBuf(cb), C.uint32_t(stage), C.uint64_t(pool), C.uint32_t(q))
}

func (s Dev) Barrier(cb CommandBuffer, srcStage, dstStage PipelineStageFlags, srcAccess, dstAccess AccessFlags) {
	C.vkj_barrier(s.p, cmdBuf(cb), C.uint32_t(srcStage), C.uint32_t(dstStage), C.uint32_t(srcAccess), C.uint32_t(dstAccess))
}

func (s Dev) Copy(cb CommandBuffer, src, dst Buffer, regions []BufferCopy) {
	if len(regions) == 0 {
		return
	}
	C.vkj_copy(s.p, cmdBuf(cb), C.uint64_t(src), C.uint64_t(dst), (*C.VkBufferCopy)(unsafe.Pointer(&regions[0])), C.uint32_t(len(regions)))
}

func (s Dev) Set(pool DescriptorPool, layout DescriptorSetLayout, w []DescWrite, out *uint64) Result {
	var wp *C.vkj_desc
	if len(w) > 0 {
		wp = (*C.vkj_desc)(unsafe.Pointer(&w[0]))
	}
	return Result(C.vkj_set(s.p, C.uint64_t(pool), C.uint64_t(layout), wp, C.uint32_t(len(w)), (*C.uint64_t)(unsafe.Pointer(out))))
}

func (s Dev) Dispatch(cb CommandBuffer, pipe Pipeline, layout PipelineLayout, set uint64, params *[8]uint32,
	begin, end uint32, itemsPerGroup uint64, maxGroups uint32, qpool QueryPool, q int32, stage0, stage1 PipelineStageFlags) {
	C.vkj_dispatch(s.p, cmdBuf(cb), C.uint64_t(pipe), C.uint64_t(layout), C.uint64_t(set),
		(*C.uint32_t)(unsafe.Pointer(&params[0])), C.uint32_t(begin), C.uint32_t(end),
		C.uint64_t(itemsPerGroup), C.uint32_t(maxGroups), C.uint64_t(qpool), C.int32_t(q), C.uint32_t(stage0), C.uint32_t(stage1))
}

func (s Dev) WaitEvent(cb CommandBuffer, ev Event) {
	C.vkj_wait_event(s.p, cmdBuf(cb), C.uint64_t(ev))
}

func (s Dev) Queries(pool QueryPool, first, n uint32, out []uint64) Result {
	if n == 0 {
		return Success
	}
	return Result(C.vkj_queries(s.p, C.uint64_t(pool), C.uint32_t(first), C.uint32_t(n), (*C.uint64_t)(unsafe.Pointer(&out[0]))))
}

// ComputePipeline creates a compute pipeline of module's entry point with
// specialization constant 0 set to local, or with no specialization when
// local is 0.
func (s Dev) ComputePipeline(cache PipelineCache, module ShaderModule, layout PipelineLayout, entry string, local uint32) (Pipeline, Result) {
	ce := C.CString(entry)
	defer C.free(unsafe.Pointer(ce))
	var out C.uint64_t
	r := C.vkj_compute_pipeline(s.p, C.uint64_t(cache), C.uint64_t(module), C.uint64_t(layout), ce, C.uint32_t(local), &out)
	return Pipeline(out), Result(r)
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

// DebugCreate creates a debug-report callback on inst.
func DebugCreate(inst Instance, flags uint32, user uintptr) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_debug_create(cInstance(inst), C.uint32_t(flags), C.uintptr_t(user), &out)
	return uint64(out), Result(r)
}

// DebugDestroy destroys a callback made by DebugCreate.
func DebugDestroy(inst Instance, cb uint64) { C.vkj_debug_destroy(cInstance(inst), C.uint64_t(cb)) }
