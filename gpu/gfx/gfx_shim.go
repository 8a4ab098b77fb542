package gfx

// Graphics goes through its own C table (gfx_shim.c) for the reasons of
// shim.go: render passes, pipelines, framebuffers, submits and presents
// take arrays of structs that vulkan-go would copy into C memory freed by
// finalizers while Vulkan may still read them, and the per-draw calls must
// not allocate. Every struct is built on the C stack; Go passes handles and
// pointers into long-lived Go arrays that hold no Go pointers.

/*
#include <stdlib.h>
#include "gfx_shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	vk "github.com/vulkan-go/vulkan"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/internal/devhook"
)

// gfxTable is one Graphics' function table (C memory).
type gfxTable struct {
	p *C.vkj_gfx
}

func newGfxTable(h devhook.Handles, swapchain bool) (gfxTable, error) {
	p := C.vkj_gfx_new()
	if p == nil {
		return gfxTable{}, fmt.Errorf("gpu: calloc of the graphics function table failed: %w", gpu.ErrOutOfMemory)
	}
	sc := C.int(0)
	if swapchain {
		sc = 1
	}
	if missing := C.vkj_gfx_init(p, h.GetInstanceProcAddr, C.VkInstance(unsafe.Pointer(h.Instance)), C.VkPhysicalDevice(unsafe.Pointer(h.Physical)), C.VkDevice(unsafe.Pointer(h.Device)), sc); missing != nil {
		name := C.GoString(missing)
		C.vkj_gfx_free(p)
		return gfxTable{}, fmt.Errorf("gpu: graphics: %s is not available", name)
	}
	return gfxTable{p}, nil
}

func (t gfxTable) free() {
	if t.p != nil {
		C.vkj_gfx_free(t.p)
	}
}

// Object kinds for destroy (gfx_shim.h).
const (
	objRenderPass   = C.VKJ_RENDER_PASS
	objFramebuffer  = C.VKJ_FRAMEBUFFER
	objImage        = C.VKJ_IMAGE
	objMemory       = C.VKJ_MEMORY
	objImageView    = C.VKJ_IMAGE_VIEW
	objShaderModule = C.VKJ_SHADER_MODULE
	objSetLayout    = C.VKJ_SET_LAYOUT
	objDescPool     = C.VKJ_DESC_POOL
	objPipeLayout   = C.VKJ_PIPE_LAYOUT
	objPipeline     = C.VKJ_PIPELINE
	objCommandPool  = C.VKJ_COMMAND_POOL
	objFence        = C.VKJ_FENCE
	objSemaphore    = C.VKJ_SEMAPHORE
	objSwapchain    = C.VKJ_SWAPCHAIN
	objSurface      = C.VKJ_SURFACE
)

// destroy destroys handle h of the given kind (0 is ignored) and zeroes it.
func (t gfxTable) destroy(kind int, h *uint64) {
	if *h != 0 {
		C.vkj_gfx_destroy(t.p, C.int(kind), C.uint64_t(*h))
		*h = 0
	}
}

func (t gfxTable) formatFeatures(format uint32) uint32 {
	return uint32(C.vkj_format_features(t.p, C.uint32_t(format)))
}

func (t gfxTable) renderPass(color, depth, finalLayout uint32) (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_render_pass(t.p, C.uint32_t(color), C.uint32_t(depth), C.uint32_t(finalLayout), &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) framebuffer(rp, color, depth uint64, w, h uint32) (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_framebuffer(t.p, C.uint64_t(rp), C.uint64_t(color), C.uint64_t(depth), C.uint32_t(w), C.uint32_t(h), &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) image(format, w, h, usage uint32) (img, size uint64, typeBits uint32, r gpu.Result) {
	var ci, cs C.uint64_t
	var tb C.uint32_t
	rr := C.vkj_image(t.p, C.uint32_t(format), C.uint32_t(w), C.uint32_t(h), C.uint32_t(usage), &ci, &cs, &tb)
	return uint64(ci), uint64(cs), uint32(tb), gpu.Result(rr)
}

func (t gfxTable) imageBind(img, size uint64, memType uint32) (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_image_bind(t.p, C.uint64_t(img), C.uint64_t(size), C.uint32_t(memType), &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) imageView(img uint64, format, aspect uint32) (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_image_view(t.p, C.uint64_t(img), C.uint32_t(format), C.uint32_t(aspect), &out)
	return uint64(out), gpu.Result(r)
}

// shaderModule creates a module from SPIR-V bytes (copied into words: the
// bytes need not be 4-aligned).
func (t gfxTable) shaderModule(code []byte) (uint64, gpu.Result) {
	if len(code) == 0 || len(code)%4 != 0 {
		return 0, gpu.ErrorInitializationFailed
	}
	words := make([]uint32, len(code)/4)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(code)), code)
	var out C.uint64_t
	r := C.vkj_shader_module(t.p, (*C.uint32_t)(unsafe.Pointer(&words[0])), C.size_t(len(code)), &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) frameLayouts(pcSize, sets uint32) (setLayout, pipeLayout, pool uint64, r gpu.Result) {
	var a, b, c C.uint64_t
	rr := C.vkj_frame_layouts(t.p, C.uint32_t(pcSize), C.uint32_t(sets), &a, &b, &c)
	return uint64(a), uint64(b), uint64(c), gpu.Result(rr)
}

func (t gfxTable) frameSet(pool, setLayout uint64, buf vk.Buffer, size uint64) (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_frame_set(t.p, C.uint64_t(pool), C.uint64_t(setLayout), hBuffer(buf), C.uint64_t(size), &out)
	return uint64(out), gpu.Result(r)
}

// pipeDesc is the fixed-function state of a graphics pipeline.
type pipeDesc struct {
	vert, frag, layout, renderPass uint64
	instanced, blend, depthTest    bool
	cull                           uint32
}

func cbool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}

func (t gfxTable) graphicsPipeline(cache vk.PipelineCache, d *pipeDesc) (uint64, gpu.Result) {
	cd := C.vkj_pipe_desc{
		vert: C.uint64_t(d.vert), frag: C.uint64_t(d.frag), layout: C.uint64_t(d.layout), render_pass: C.uint64_t(d.renderPass),
		instanced: cbool(d.instanced), cull: C.uint32_t(d.cull), blend: cbool(d.blend), depth_test: cbool(d.depthTest),
	}
	var out C.uint64_t
	r := C.vkj_graphics_pipeline(t.p, hPipeCache(cache), &cd, &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) fence(signaled bool) (uint64, gpu.Result) {
	var out C.uint64_t
	s := C.int(0)
	if signaled {
		s = 1
	}
	r := C.vkj_fence(t.p, s, &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) semaphore() (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_semaphore(t.p, &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) commandPool(qfam uint32) (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_command_pool(t.p, C.uint32_t(qfam), &out)
	return uint64(out), gpu.Result(r)
}

// allocCBs allocates len(out) command buffers from pool into out.
func (t gfxTable) allocCBs(pool uint64, secondary bool, out []vk.CommandBuffer) gpu.Result {
	if len(out) == 0 {
		return gpu.Success
	}
	s := C.int(0)
	if secondary {
		s = 1
	}
	return gpu.Result(C.vkj_alloc_cbs(t.p, C.uint64_t(pool), s, C.uint32_t(len(out)), (*C.VkCommandBuffer)(unsafe.Pointer(&out[0]))))
}

// frameBegin waits for fence (when wait) and resets the pools.
func (t gfxTable) frameBegin(fence uint64, wait bool, timeoutNS uint64, pools []uint64) gpu.Result {
	w := C.int(0)
	if wait {
		w = 1
	}
	var pp *C.uint64_t
	if len(pools) > 0 {
		pp = (*C.uint64_t)(unsafe.Pointer(&pools[0]))
	}
	return gpu.Result(C.vkj_frame_begin(t.p, C.uint64_t(fence), w, C.uint64_t(timeoutNS), pp, C.uint32_t(len(pools))))
}

func (t gfxTable) resetPool(pool uint64) gpu.Result {
	return gpu.Result(C.vkj_reset_pool(t.p, C.uint64_t(pool)))
}

func (t gfxTable) waitFence(fence uint64, timeoutNS uint64) gpu.Result {
	return gpu.Result(C.vkj_wait_fence(t.p, C.uint64_t(fence), C.uint64_t(timeoutNS)))
}

func gfxCB(cb vk.CommandBuffer) C.VkCommandBuffer { return C.VkCommandBuffer(unsafe.Pointer(cb)) }

func (t gfxTable) secondaryBegin(cb vk.CommandBuffer, rp, fb uint64, w, h uint32, layout, set uint64) gpu.Result {
	return gpu.Result(C.vkj_secondary_begin(t.p, gfxCB(cb), C.uint64_t(rp), C.uint64_t(fb), C.uint32_t(w), C.uint32_t(h),
		C.uint64_t(layout), C.uint64_t(set)))
}

func (t gfxTable) cbEnd(cb vk.CommandBuffer) gpu.Result {
	return gpu.Result(C.vkj_cb_end(t.p, gfxCB(cb)))
}

func (t gfxTable) bindPipeline(cb vk.CommandBuffer, pipe uint64) {
	C.vkj_bind_pipeline(t.p, gfxCB(cb), C.uint64_t(pipe))
}

func (t gfxTable) bindMesh(cb vk.CommandBuffer, m *gfxMesh) {
	C.vkj_bind_mesh(t.p, gfxCB(cb), C.uint64_t(m.vbuf), C.uint64_t(m.voff), C.uint64_t(m.ibuf), C.uint64_t(m.ioff),
		C.uint32_t(m.indexType), C.uint64_t(m.inst), C.uint64_t(m.instOff))
}

func (t gfxTable) state(cb vk.CommandBuffer, kind uint32, x, y, w, h float32) {
	C.vkj_state(t.p, gfxCB(cb), C.uint32_t(kind), C.float(x), C.float(y), C.float(w), C.float(h))
}

// draw pushes the 80 bytes at pc and draws. pc points into a render
// context's buffer (plain bytes, no Go pointers); it is passed as a
// *C.uint8_t, a pointer to pointer-free memory, which cgo passes without
// the run-time pointer check it makes for an unsafe.Pointer (8% of the
// recording time).
func (t gfxTable) draw(cb vk.CommandBuffer, layout uint64, pc *byte, indexed bool, count, instances, first, firstInstance uint32) {
	ix := C.int(0)
	if indexed {
		ix = 1
	}
	C.vkj_draw(t.p, gfxCB(cb), C.uint64_t(layout), (*C.uint8_t)(pc), C.uint32_t(pushConstantBytes), ix,
		C.uint32_t(count), C.uint32_t(instances), C.uint32_t(first), C.uint32_t(firstInstance))
}

func (t gfxTable) clear(cb vk.CommandBuffer, flags uint32, rgba *[4]float32, depth float32, w, h uint32) {
	C.vkj_clear(t.p, gfxCB(cb), C.uint32_t(flags), (*C.float)(unsafe.Pointer(&rgba[0])), C.float(depth), C.uint32_t(w), C.uint32_t(h))
}

func (t gfxTable) frameRecord(cb vk.CommandBuffer, rp, fb uint64, w, h uint32, clear *[4]float32, secs []vk.CommandBuffer,
	copyImage uint64, copyBuf vk.Buffer) gpu.Result {
	var sp *C.VkCommandBuffer
	if len(secs) > 0 {
		sp = (*C.VkCommandBuffer)(unsafe.Pointer(&secs[0]))
	}
	return gpu.Result(C.vkj_frame_record(t.p, gfxCB(cb), C.uint64_t(rp), C.uint64_t(fb), C.uint32_t(w), C.uint32_t(h),
		(*C.float)(unsafe.Pointer(&clear[0])), sp, C.uint32_t(len(secs)), C.uint64_t(copyImage), hBuffer(copyBuf)))
}

func (t gfxTable) frameSubmit(q vk.Queue, cb vk.CommandBuffer, waitSem, signalSem, fence uint64) gpu.Result {
	return gpu.Result(C.vkj_frame_submit(t.p, C.VkQueue(unsafe.Pointer(q)), gfxCB(cb), C.uint64_t(waitSem), C.uint64_t(signalSem), C.uint64_t(fence)))
}

func (t gfxTable) queueWaitIdle(q vk.Queue) gpu.Result {
	return gpu.Result(C.vkj_queue_wait_idle(t.p, C.VkQueue(unsafe.Pointer(q))))
}

// surfaceCaps is VkSurfaceCapabilitiesKHR, flattened.
type surfaceCaps struct {
	minImages, maxImages     uint32
	curW, curH, minW, minH   uint32
	maxW, maxH               uint32
	transforms, curTransform uint32
	alpha, usage             uint32
}

func (t gfxTable) surfaceSupport(qfam uint32, surface uint64) bool {
	return C.vkj_surface_support(t.p, C.uint32_t(qfam), C.uint64_t(surface)) != 0
}

func (t gfxTable) surfaceCaps(surface uint64) (surfaceCaps, gpu.Result) {
	var c C.vkj_surface_caps
	r := C.vkj_surface_caps_get(t.p, C.uint64_t(surface), &c)
	return surfaceCaps{
		minImages: uint32(c.min_images), maxImages: uint32(c.max_images),
		curW: uint32(c.cur_w), curH: uint32(c.cur_h), minW: uint32(c.min_w), minH: uint32(c.min_h),
		maxW: uint32(c.max_w), maxH: uint32(c.max_h),
		transforms: uint32(c.transforms), curTransform: uint32(c.cur_transform),
		alpha: uint32(c.alpha), usage: uint32(c.usage),
	}, gpu.Result(r)
}

func (t gfxTable) surfaceFormats(surface uint64) (formats, spaces []uint32) {
	var f, s [64]C.uint32_t
	n := int(C.vkj_surface_formats(t.p, C.uint64_t(surface), &f[0], &s[0], 64))
	for i := range n {
		formats = append(formats, uint32(f[i]))
		spaces = append(spaces, uint32(s[i]))
	}
	return formats, spaces
}

func (t gfxTable) presentModes(surface uint64) []uint32 {
	var m [16]C.uint32_t
	n := int(C.vkj_present_modes(t.p, C.uint64_t(surface), &m[0], 16))
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(m[i])
	}
	return out
}

type swapchainDesc struct {
	surface, old                uint64
	images, format, space, w, h uint32
	transform, alpha, mode      uint32
}

func (t gfxTable) swapchain(s *swapchainDesc) (uint64, gpu.Result) {
	var out C.uint64_t
	r := C.vkj_swapchain(t.p, C.uint64_t(s.surface), C.uint64_t(s.old), C.uint32_t(s.images), C.uint32_t(s.format),
		C.uint32_t(s.space), C.uint32_t(s.w), C.uint32_t(s.h), C.uint32_t(s.transform), C.uint32_t(s.alpha), C.uint32_t(s.mode), &out)
	return uint64(out), gpu.Result(r)
}

func (t gfxTable) swapchainImages(sc uint64) ([]uint64, gpu.Result) {
	var imgs [64]C.uint64_t
	var n C.uint32_t
	r := C.vkj_swapchain_images(t.p, C.uint64_t(sc), &imgs[0], 64, &n)
	if r != C.VK_SUCCESS {
		return nil, gpu.Result(r)
	}
	if n > 64 {
		return nil, gpu.ErrorTooManyObjects
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(imgs[i])
	}
	return out, gpu.Success
}

// acquire writes the image index into *index (a long-lived field: no
// allocation).
func (t gfxTable) acquire(sc uint64, timeoutNS uint64, sem uint64, index *uint32) gpu.Result {
	return gpu.Result(C.vkj_acquire(t.p, C.uint64_t(sc), C.uint64_t(timeoutNS), C.uint64_t(sem), (*C.uint32_t)(unsafe.Pointer(index))))
}

func (t gfxTable) present(q vk.Queue, sc uint64, index uint32, waitSem uint64) gpu.Result {
	return gpu.Result(C.vkj_present(t.p, C.VkQueue(unsafe.Pointer(q)), C.uint64_t(sc), C.uint32_t(index), C.uint64_t(waitSem)))
}

// bufferU64 is a VkBuffer as the C layer's uint64_t handle.
func bufferU64(h vk.Buffer) uint64 { return uint64(uintptr(unsafe.Pointer(h))) }

func ptrU64(p unsafe.Pointer) C.uint64_t { return C.uint64_t(uintptr(p)) }

func hBuffer(h vk.Buffer) C.uint64_t           { return ptrU64(unsafe.Pointer(h)) }
func hPipeCache(h vk.PipelineCache) C.uint64_t { return ptrU64(unsafe.Pointer(h)) }
