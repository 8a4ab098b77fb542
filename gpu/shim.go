package gpu

// The Go side of package gpu's Vulkan calls. Every one of them (the
// loader: dlopen of libvulkan.so.1 and the one vkGetInstanceProcAddr;
// object creation and destruction; the hot path: submit, dispatch,
// barriers, copies, descriptor writes, fences; the debug-report callback)
// goes through the C code of package gpu/internal/vkshim, the one package
// that uses cgo (its doc says why it is not a generated binding). Package
// gpu imports it as vk, for its handle types and constants. This file
// adapts it to package gpu's types (Result, Message, errors).
//
// Validation messages become errors, never crashes: pipeline creation runs
// locked to its thread and fails with ErrValidation when the layer objected
// on that thread (captureReset, captured), and a command buffer whose
// recording drew an error message is not submitted: its tasks fail with
// ErrValidation.

import (
	"fmt"
	"sync"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

// bufferCopy has the layout of VkBufferCopy; descWrite that of vkj_desc.
type (
	bufferCopy = vk.BufferCopy
	descWrite  = vk.DescWrite
)

var (
	loaderOnce sync.Once
	loaderErr  error
)

// loadVulkan dlopens the loader once per process.
func loadVulkan() error {
	loaderOnce.Do(func() {
		if msg := vk.Load(); msg != "" {
			loaderErr = fmt.Errorf("%w: cannot load the Vulkan loader (libvulkan.so.1: %s); %s",
				ErrNoDevice, msg, installHint)
		}
	})
	return loaderErr
}

// hasInstanceLayer reports whether the loader knows the instance layer.
func hasInstanceLayer(name string) bool { return vk.HasInstanceLayer(name) }

func hasInstanceExtension(name string) bool { return vk.HasInstanceExtension(name) }

func hasDeviceExtension(inst vk.Instance, pd vk.PhysicalDevice, name string) bool {
	return vk.HasDeviceExtension(inst, pd, name)
}

// queueFamily is one queue family's properties.
type queueFamily = vk.QueueFamily

func queueFamilies(inst vk.Instance, pd vk.PhysicalDevice) []queueFamily {
	return vk.QueueFamilies(inst, pd)
}

// Debug-report routing: the C callback passes back the user value given at
// registration; it indexes debugSinks.
var (
	debugMu    sync.Mutex
	debugSinks = map[uintptr]*messageLog{}
	debugNext  uintptr
)

func init() { vk.DebugReport = debugReport }

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

func debugReport(user uintptr, flags uint32, code int32, layer, msg string) {
	debugMu.Lock()
	m := debugSinks[user]
	debugMu.Unlock()
	if m == nil {
		return
	}
	m.add(Message{Severity: severityOf(flags), Code: code, Layer: layer, Text: msg})
}

// shimDev is the per-device function table of the shim (C memory). Its
// object calls (vk.Dev's methods) are used directly; the hot-path calls
// below return package gpu's Result.
type shimDev struct {
	vk.Dev
}

func newShimDev(inst vk.Instance, dev vk.Device) (shimDev, error) {
	t, missing, ok := vk.NewDev(inst, dev)
	if !ok {
		if missing == "" {
			return shimDev{}, fmt.Errorf("gpu: calloc of the device function table failed: %w", ErrOutOfMemory)
		}
		return shimDev{}, fmt.Errorf("gpu: vkGetDeviceProcAddr(%s) returned NULL: %w", missing, ErrNoDevice)
	}
	return shimDev{t}, nil
}

func (s shimDev) free() { s.Dev.Free() }

// The hot-path calls. Pointer arguments point into long-lived Go arrays
// (slot fields) that hold no Go pointers, so passing them allocates nothing.

func (s shimDev) slotReset(fence vk.Fence, cmdPool vk.CommandPool, descPool vk.DescriptorPool) Result {
	return Result(s.Dev.SlotReset(fence, cmdPool, descPool))
}

func (s shimDev) begin(cb vk.CommandBuffer) Result { return Result(s.Dev.Begin(cb)) }
func (s shimDev) end(cb vk.CommandBuffer) Result   { return Result(s.Dev.End(cb)) }

func (s shimDev) submit(q vk.Queue, cb vk.CommandBuffer, fence vk.Fence) Result {
	return Result(s.Dev.Submit(q, cb, fence))
}

func (s shimDev) wait(fence vk.Fence, timeoutNS uint64) Result {
	return Result(s.Dev.Wait(fence, timeoutNS))
}

func (s shimDev) queueIdle(q vk.Queue) Result { return Result(s.Dev.QueueIdle(q)) }

func (s shimDev) resetQueries(cb vk.CommandBuffer, pool vk.QueryPool, first, n uint32) {
	s.Dev.ResetQueries(cb, pool, first, n)
}

func (s shimDev) timestamp(cb vk.CommandBuffer, stage vk.PipelineStageFlags, pool vk.QueryPool, q uint32) {
	s.Dev.Timestamp(cb, stage, pool, q)
}

func (s shimDev) barrier(cb vk.CommandBuffer, srcStage, dstStage vk.PipelineStageFlags, srcAccess, dstAccess vk.AccessFlags) {
	s.Dev.Barrier(cb, srcStage, dstStage, srcAccess, dstAccess)
}

func (s shimDev) copy(cb vk.CommandBuffer, src, dst vk.Buffer, regions []bufferCopy) {
	s.Dev.Copy(cb, src, dst, regions)
}

func (s shimDev) set(pool vk.DescriptorPool, layout vk.DescriptorSetLayout, w []descWrite, out *uint64) Result {
	return Result(s.Dev.Set(pool, layout, w, out))
}

func (s shimDev) dispatch(cb vk.CommandBuffer, pipe vk.Pipeline, layout vk.PipelineLayout, set uint64, params *[8]uint32,
	begin, end uint32, itemsPerGroup uint64, maxGroups uint32, qpool vk.QueryPool, q int32, stage0, stage1 vk.PipelineStageFlags) {
	s.Dev.Dispatch(cb, pipe, layout, set, params, begin, end, itemsPerGroup, maxGroups, qpool, q, stage0, stage1)
}

func (s shimDev) waitEvent(cb vk.CommandBuffer, ev vk.Event) { s.Dev.WaitEvent(cb, ev) }

func (s shimDev) queries(pool vk.QueryPool, first, n uint32, out []uint64) Result {
	return Result(s.Dev.Queries(pool, first, n, out))
}

func (s shimDev) computePipeline(cache vk.PipelineCache, module vk.ShaderModule, layout vk.PipelineLayout, entry string, local uint32) (vk.Pipeline, Result) {
	p, r := s.Dev.ComputePipeline(cache, module, layout, entry, local)
	return p, Result(r)
}

// Debug-report helpers.

// captureReset starts counting the error messages reported on this OS
// thread (the caller holds runtime.LockOSThread).
func captureReset() { vk.CaptureReset() }

// captured returns the error messages reported on this OS thread since
// captureReset: their count and the first one.
func captured() (int, string) { return vk.Captured() }

func debugCreate(inst vk.Instance, flags uint32, user uintptr) (uint64, Result) {
	cb, r := vk.DebugCreate(inst, flags, user)
	return cb, Result(r)
}

func debugDestroy(inst vk.Instance, cb uint64) { vk.DebugDestroy(inst, cb) }
