package gpu

// The Go side of package gpu's C shim. Object creation and destruction go
// through the vulkan-go binding; the calls that pass arrays of structs, the
// hot path (submit, dispatch, barriers, copies, descriptor writes, fences),
// the loader (dlopen of libvulkan.so.1, the one vkGetInstanceProcAddr) and
// the debug-report callback go through the C code of package
// gpu/internal/vkshim, the one package that uses cgo (its doc says why the
// binding alone is not enough). This file adapts it to package gpu's types
// (Result, Message, errors).
//
// Validation messages become errors, never crashes: pipeline creation runs
// locked to its thread and fails with ErrValidation when the layer objected
// on that thread (captureReset, captured), and a command buffer whose
// recording drew an error message is not submitted: its tasks fail with
// ErrValidation.

import (
	"fmt"
	"sync"
	"unsafe"

	vk "github.com/vulkan-go/vulkan"

	"github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

// bufferCopy has the layout of VkBufferCopy; descWrite that of vkj_desc.
type (
	bufferCopy = vkshim.BufferCopy
	descWrite  = vkshim.DescWrite
)

// bufferU64 is a buffer handle as a plain uint64 (for descWrite).
func bufferU64(h vk.Buffer) uint64 { return vkshim.BufferU64(h) }

// pipelineOf converts a pipeline handle made by the shim back to vulkan-go.
func pipelineOf(u uint64) vk.Pipeline { return vkshim.PipelineOf(u) }

var (
	loaderOnce sync.Once
	loaderErr  error
)

// loadVulkan dlopens the loader and initialises vulkan-go's global function
// pointers once per process.
func loadVulkan() error {
	loaderOnce.Do(func() {
		if msg := vkshim.Load(); msg != "" {
			loaderErr = fmt.Errorf("%w: cannot load the Vulkan loader (libvulkan.so.1: %s); %s",
				ErrNoDevice, msg, installHint)
			return
		}
		vk.SetGetInstanceProcAddr(vkshim.GIPA())
		if err := vk.Init(); err != nil {
			loaderErr = fmt.Errorf("%w: vulkan-go Init: %v; %s", ErrNoDevice, err, installHint)
		}
	})
	return loaderErr
}

// hasInstanceLayer reports whether the loader knows the instance layer.
func hasInstanceLayer(name string) bool { return vkshim.HasInstanceLayer(name) }

func hasInstanceExtension(name string) bool { return vkshim.HasInstanceExtension(name) }

func hasDeviceExtension(inst vk.Instance, pd vk.PhysicalDevice, name string) bool {
	return vkshim.HasDeviceExtension(inst, pd, name)
}

// queueFamily is one queue family's properties.
type queueFamily = vkshim.QueueFamily

func queueFamilies(inst vk.Instance, pd vk.PhysicalDevice) []queueFamily {
	return vkshim.QueueFamilies(inst, pd)
}

// Debug-report routing: the C callback passes back the user value given at
// registration; it indexes debugSinks.
var (
	debugMu    sync.Mutex
	debugSinks = map[uintptr]*messageLog{}
	debugNext  uintptr
)

func init() { vkshim.DebugReport = debugReport }

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

// shimDev is the per-device function table of the shim (C memory).
type shimDev struct {
	t vkshim.Dev
}

func newShimDev(inst vk.Instance, dev vk.Device) (shimDev, error) {
	t, missing, ok := vkshim.NewDev(inst, dev)
	if !ok {
		if missing == "" {
			return shimDev{}, fmt.Errorf("gpu: calloc of the device function table failed: %w", ErrOutOfMemory)
		}
		return shimDev{}, fmt.Errorf("gpu: vkGetDeviceProcAddr(%s) returned NULL: %w", missing, ErrNoDevice)
	}
	return shimDev{t}, nil
}

func (s shimDev) free() { s.t.Free() }

// The hot-path calls. Pointer arguments point into long-lived Go arrays
// (slot fields) that hold no Go pointers, so passing them allocates nothing.

func (s shimDev) slotReset(fence vk.Fence, cmdPool vk.CommandPool, descPool vk.DescriptorPool) Result {
	return Result(s.t.SlotReset(fence, cmdPool, descPool))
}

func (s shimDev) begin(cb vk.CommandBuffer) Result { return Result(s.t.Begin(cb)) }
func (s shimDev) end(cb vk.CommandBuffer) Result   { return Result(s.t.End(cb)) }

func (s shimDev) submit(q vk.Queue, cb vk.CommandBuffer, fence vk.Fence) Result {
	return Result(s.t.Submit(q, cb, fence))
}

func (s shimDev) wait(fence vk.Fence, timeoutNS uint64) Result {
	return Result(s.t.Wait(fence, timeoutNS))
}

func (s shimDev) queueIdle(q vk.Queue) Result { return Result(s.t.QueueIdle(q)) }

func (s shimDev) resetQueries(cb vk.CommandBuffer, pool vk.QueryPool, first, n uint32) {
	s.t.ResetQueries(cb, pool, first, n)
}

func (s shimDev) timestamp(cb vk.CommandBuffer, stage vk.PipelineStageFlagBits, pool vk.QueryPool, q uint32) {
	s.t.Timestamp(cb, stage, pool, q)
}

func (s shimDev) barrier(cb vk.CommandBuffer, srcStage, dstStage vk.PipelineStageFlagBits, srcAccess, dstAccess vk.AccessFlagBits) {
	s.t.Barrier(cb, srcStage, dstStage, srcAccess, dstAccess)
}

func (s shimDev) copy(cb vk.CommandBuffer, src, dst vk.Buffer, regions []bufferCopy) {
	s.t.Copy(cb, src, dst, regions)
}

func (s shimDev) set(pool vk.DescriptorPool, layout vk.DescriptorSetLayout, w []descWrite, out *uint64) Result {
	return Result(s.t.Set(pool, layout, w, out))
}

func (s shimDev) dispatch(cb vk.CommandBuffer, pipe uint64, layout vk.PipelineLayout, set uint64, params *[8]uint32,
	begin, end uint32, itemsPerGroup uint64, maxGroups uint32, qpool vk.QueryPool, q int32, stage0, stage1 vk.PipelineStageFlagBits) {
	s.t.Dispatch(cb, pipe, layout, set, params, begin, end, itemsPerGroup, maxGroups, qpool, q, stage0, stage1)
}

func (s shimDev) waitEvent(cb vk.CommandBuffer, ev vk.Event) { s.t.WaitEvent(cb, ev) }

func (s shimDev) queries(pool vk.QueryPool, first, n uint32, out []uint64) Result {
	return Result(s.t.Queries(pool, first, n, out))
}

func (s shimDev) computePipeline(cache vk.PipelineCache, module vk.ShaderModule, layout vk.PipelineLayout, entry string, local uint32) (uint64, Result) {
	p, r := s.t.ComputePipeline(cache, module, layout, entry, local)
	return p, Result(r)
}

// Debug-report helpers.

// captureReset starts counting the error messages reported on this OS
// thread (the caller holds runtime.LockOSThread).
func captureReset() { vkshim.CaptureReset() }

// captured returns the error messages reported on this OS thread since
// captureReset: their count and the first one.
func captured() (int, string) { return vkshim.Captured() }

func debugChainInfo(flags uint32, user uintptr) unsafe.Pointer {
	return vkshim.DebugChainInfo(flags, user)
}

func cFree(p unsafe.Pointer) { vkshim.Free(p) }

func debugCreate(inst vk.Instance, flags uint32, user uintptr) (uint64, Result) {
	cb, r := vkshim.DebugCreate(inst, flags, user)
	return cb, Result(r)
}

func debugDestroy(inst vk.Instance, cb uint64) { vkshim.DebugDestroy(inst, cb) }
