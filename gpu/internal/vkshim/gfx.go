package vkshim

// The graphics table (gfx_shim.c): render passes, pipelines, framebuffers,
// images, swapchains, submits, presents and the per-draw calls of package
// gpu/gfx. The per-draw calls must not allocate. Every struct is built on the C
// stack; Go passes handles and pointers into long-lived Go arrays that
// hold no Go pointers. Package gpu/gfx is its user.

/*
#include <stdlib.h>
#include "gfx_shim.h"
*/
import "C"

import "unsafe"

// Gfx is one graphics target's function table (C memory).
type Gfx struct {
	p *C.vkj_gfx
}

// NewGfx loads the graphics functions of dev through GIPA (the
// swapchain's only when swapchain is set). On failure ok is false and
// missing names the function that is not available, or is empty when the
// table could not be allocated.
func NewGfx(inst Instance, phys PhysicalDevice, dev Device, swapchain bool) (t Gfx, missing string, ok bool) {
	p := C.vkj_gfx_new()
	if p == nil {
		return Gfx{}, "", false
	}
	sc := C.int(0)
	if swapchain {
		sc = 1
	}
	if m := C.vkj_gfx_init(p, cInstance(inst), cPhys(phys), cDevice(dev), sc); m != nil {
		name := C.GoString(m)
		C.vkj_gfx_free(p)
		return Gfx{}, name, false
	}
	return Gfx{p}, "", true
}

// Valid reports whether t holds a table (NewGfx succeeded, Free not called
// on this copy).
func (t Gfx) Valid() bool { return t.p != nil }

// Free frees the table (not the objects made through it).
func (t Gfx) Free() {
	if t.p != nil {
		C.vkj_gfx_free(t.p)
	}
}

// Object kinds for destroy (gfx_shim.h).
const (
	ObjRenderPass   = C.VKJ_RENDER_PASS
	ObjFramebuffer  = C.VKJ_FRAMEBUFFER
	ObjImage        = C.VKJ_IMAGE
	ObjMemory       = C.VKJ_MEMORY
	ObjImageView    = C.VKJ_IMAGE_VIEW
	ObjShaderModule = C.VKJ_SHADER_MODULE
	ObjSetLayout    = C.VKJ_SET_LAYOUT
	ObjDescPool     = C.VKJ_DESC_POOL
	ObjPipeLayout   = C.VKJ_PIPE_LAYOUT
	ObjPipeline     = C.VKJ_PIPELINE
	ObjCommandPool  = C.VKJ_COMMAND_POOL
	ObjFence        = C.VKJ_FENCE
	ObjSemaphore    = C.VKJ_SEMAPHORE
	ObjSwapchain    = C.VKJ_SWAPCHAIN
	ObjSurface      = C.VKJ_SURFACE
)

// Destroy destroys handle h of the given kind (0 is ignored) and zeroes it.
func (t Gfx) Destroy(kind int, h *uint64) {
	if *h != 0 {
		C.vkj_gfx_destroy(t.p, C.int(kind), C.uint64_t(*h))
		*h = 0
	}
}

func (t Gfx) FormatFeatures(format uint32) uint32 {
	return uint32(C.vkj_format_features(t.p, C.uint32_t(format)))
}

func (t Gfx) RenderPass(color, depth, finalLayout uint32) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_render_pass(t.p, C.uint32_t(color), C.uint32_t(depth), C.uint32_t(finalLayout), &out)
	return uint64(out), Result(r)
}

func (t Gfx) Framebuffer(rp, color, depth uint64, w, h uint32) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_framebuffer(t.p, C.uint64_t(rp), C.uint64_t(color), C.uint64_t(depth), C.uint32_t(w), C.uint32_t(h), &out)
	return uint64(out), Result(r)
}

func (t Gfx) Image(format, w, h, usage uint32) (img, size uint64, typeBits uint32, r Result) {
	var ci, cs C.uint64_t
	var tb C.uint32_t
	rr := C.vkj_image(t.p, C.uint32_t(format), C.uint32_t(w), C.uint32_t(h), C.uint32_t(usage), &ci, &cs, &tb)
	return uint64(ci), uint64(cs), uint32(tb), Result(rr)
}

func (t Gfx) ImageBind(img, size uint64, memType uint32) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_image_bind(t.p, C.uint64_t(img), C.uint64_t(size), C.uint32_t(memType), &out)
	return uint64(out), Result(r)
}

func (t Gfx) ImageView(img uint64, format, aspect uint32) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_image_view(t.p, C.uint64_t(img), C.uint32_t(format), C.uint32_t(aspect), &out)
	return uint64(out), Result(r)
}

// ShaderModule creates a module from SPIR-V bytes (copied into words: the
// bytes need not be 4-aligned).
func (t Gfx) ShaderModule(code []byte) (uint64, Result) {
	words, ok := spirvWords(code)
	if !ok {
		return 0, ErrorInitializationFailed
	}
	var out C.uint64_t
	r := C.vkj_shader_module(t.p, (*C.uint32_t)(unsafe.Pointer(&words[0])), C.size_t(len(code)), &out)
	return uint64(out), Result(r)
}

func (t Gfx) FrameLayouts(pcSize, sets uint32) (setLayout, pipeLayout, pool uint64, r Result) {
	var a, b, c C.uint64_t
	rr := C.vkj_frame_layouts(t.p, C.uint32_t(pcSize), C.uint32_t(sets), &a, &b, &c)
	return uint64(a), uint64(b), uint64(c), Result(rr)
}

func (t Gfx) FrameSet(pool, setLayout uint64, buf Buffer, size uint64) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_frame_set(t.p, C.uint64_t(pool), C.uint64_t(setLayout), C.uint64_t(buf), C.uint64_t(size), &out)
	return uint64(out), Result(r)
}

// PipeDesc is the fixed-function state of a graphics pipeline.
type PipeDesc struct {
	Vert, Frag, Layout, RenderPass uint64
	Instanced, Blend, DepthTest    bool
	Cull                           uint32
}

func cbool(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}

func (t Gfx) GraphicsPipeline(cache PipelineCache, d *PipeDesc) (uint64, Result) {
	cd := C.vkj_pipe_desc{
		vert: C.uint64_t(d.Vert), frag: C.uint64_t(d.Frag), layout: C.uint64_t(d.Layout), render_pass: C.uint64_t(d.RenderPass),
		instanced: cbool(d.Instanced), cull: C.uint32_t(d.Cull), blend: cbool(d.Blend), depth_test: cbool(d.DepthTest),
	}
	var out C.uint64_t
	r := C.vkj_graphics_pipeline(t.p, C.uint64_t(cache), &cd, &out)
	return uint64(out), Result(r)
}

func (t Gfx) Fence(signaled bool) (uint64, Result) {
	var out C.uint64_t
	s := C.int(0)
	if signaled {
		s = 1
	}
	r := C.vkj_fence(t.p, s, &out)
	return uint64(out), Result(r)
}

func (t Gfx) Semaphore() (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_semaphore(t.p, &out)
	return uint64(out), Result(r)
}

func (t Gfx) CommandPool(qfam uint32) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_command_pool(t.p, C.uint32_t(qfam), &out)
	return uint64(out), Result(r)
}

// AllocCBs allocates len(out) command buffers from pool into out.
func (t Gfx) AllocCBs(pool uint64, secondary bool, out []CommandBuffer) Result {
	if len(out) == 0 {
		return Success
	}
	s := C.int(0)
	if secondary {
		s = 1
	}
	return Result(C.vkj_alloc_cbs(t.p, C.uint64_t(pool), s, C.uint32_t(len(out)), (*C.VkCommandBuffer)(unsafe.Pointer(&out[0]))))
}

// FrameBegin waits for fence (when wait) and resets the pools.
func (t Gfx) FrameBegin(fence uint64, wait bool, timeoutNS uint64, pools []uint64) Result {
	w := C.int(0)
	if wait {
		w = 1
	}
	var pp *C.uint64_t
	if len(pools) > 0 {
		pp = (*C.uint64_t)(unsafe.Pointer(&pools[0]))
	}
	return Result(C.vkj_frame_begin(t.p, C.uint64_t(fence), w, C.uint64_t(timeoutNS), pp, C.uint32_t(len(pools))))
}

func (t Gfx) ResetPool(pool uint64) Result {
	return Result(C.vkj_reset_pool(t.p, C.uint64_t(pool)))
}

func (t Gfx) WaitFence(fence uint64, timeoutNS uint64) Result {
	return Result(C.vkj_wait_fence(t.p, C.uint64_t(fence), C.uint64_t(timeoutNS)))
}

func (t Gfx) SecondaryBegin(cb CommandBuffer, rp, fb uint64, w, h uint32, layout, set uint64) Result {
	return Result(C.vkj_secondary_begin(t.p, cmdBuf(cb), C.uint64_t(rp), C.uint64_t(fb), C.uint32_t(w), C.uint32_t(h),
		C.uint64_t(layout), C.uint64_t(set)))
}

func (t Gfx) CbEnd(cb CommandBuffer) Result {
	return Result(C.vkj_cb_end(t.p, cmdBuf(cb)))
}

func (t Gfx) BindPipeline(cb CommandBuffer, pipe uint64) {
	C.vkj_bind_pipeline(t.p, cmdBuf(cb), C.uint64_t(pipe))
}

// BindMesh binds vertex buffer vbuf at voff, index buffer ibuf at ioff
// (indexType 0 none, 1 uint16, 2 uint32) and instance buffer inst at
// instOff (0: none).
func (t Gfx) BindMesh(cb CommandBuffer, vbuf, voff, ibuf, ioff uint64, indexType uint32, inst, instOff uint64) {
	C.vkj_bind_mesh(t.p, cmdBuf(cb), C.uint64_t(vbuf), C.uint64_t(voff), C.uint64_t(ibuf), C.uint64_t(ioff),
		C.uint32_t(indexType), C.uint64_t(inst), C.uint64_t(instOff))
}

func (t Gfx) State(cb CommandBuffer, kind uint32, x, y, w, h float32) {
	C.vkj_state(t.p, cmdBuf(cb), C.uint32_t(kind), C.float(x), C.float(y), C.float(w), C.float(h))
}

// Draw pushes the pcSize bytes at pc and draws. pc points into a render
// context's buffer (plain bytes, no Go pointers); it is passed as a
// *C.uint8_t, a pointer to pointer-free memory, which cgo passes without
// the run-time pointer check it makes for an unsafe.Pointer (8% of the
// recording time).
func (t Gfx) Draw(cb CommandBuffer, layout uint64, pc *byte, pcSize uint32, indexed bool, count, instances, first, firstInstance uint32) {
	ix := C.int(0)
	if indexed {
		ix = 1
	}
	C.vkj_draw(t.p, cmdBuf(cb), C.uint64_t(layout), (*C.uint8_t)(pc), C.uint32_t(pcSize), ix,
		C.uint32_t(count), C.uint32_t(instances), C.uint32_t(first), C.uint32_t(firstInstance))
}

func (t Gfx) Clear(cb CommandBuffer, flags uint32, rgba *[4]float32, depth float32, w, h uint32) {
	C.vkj_clear(t.p, cmdBuf(cb), C.uint32_t(flags), (*C.float)(unsafe.Pointer(&rgba[0])), C.float(depth), C.uint32_t(w), C.uint32_t(h))
}

func (t Gfx) FrameRecord(cb CommandBuffer, rp, fb uint64, w, h uint32, clear *[4]float32, secs []CommandBuffer,
	copyImage uint64, copyBuf Buffer) Result {
	var sp *C.VkCommandBuffer
	if len(secs) > 0 {
		sp = (*C.VkCommandBuffer)(unsafe.Pointer(&secs[0]))
	}
	return Result(C.vkj_frame_record(t.p, cmdBuf(cb), C.uint64_t(rp), C.uint64_t(fb), C.uint32_t(w), C.uint32_t(h),
		(*C.float)(unsafe.Pointer(&clear[0])), sp, C.uint32_t(len(secs)), C.uint64_t(copyImage), C.uint64_t(copyBuf)))
}

func (t Gfx) FrameSubmit(q Queue, cb CommandBuffer, waitSem, signalSem, fence uint64) Result {
	return Result(C.vkj_frame_submit(t.p, cQueue(q), cmdBuf(cb), C.uint64_t(waitSem), C.uint64_t(signalSem), C.uint64_t(fence)))
}

func (t Gfx) QueueWaitIdle(q Queue) Result {
	return Result(C.vkj_queue_wait_idle(t.p, cQueue(q)))
}

// SurfaceCaps is VkSurfaceCapabilitiesKHR, flattened.
type SurfaceCaps struct {
	MinImages, MaxImages     uint32
	CurW, CurH, MinW, MinH   uint32
	MaxW, MaxH               uint32
	Transforms, CurTransform uint32
	Alpha, Usage             uint32
}

func (t Gfx) SurfaceSupport(qfam uint32, surface uint64) bool {
	return C.vkj_surface_support(t.p, C.uint32_t(qfam), C.uint64_t(surface)) != 0
}

func (t Gfx) SurfaceCaps(surface uint64) (SurfaceCaps, Result) {
	var c C.vkj_surface_caps
	r := C.vkj_surface_caps_get(t.p, C.uint64_t(surface), &c)
	return SurfaceCaps{
		MinImages: uint32(c.min_images), MaxImages: uint32(c.max_images),
		CurW: uint32(c.cur_w), CurH: uint32(c.cur_h), MinW: uint32(c.min_w), MinH: uint32(c.min_h),
		MaxW: uint32(c.max_w), MaxH: uint32(c.max_h),
		Transforms: uint32(c.transforms), CurTransform: uint32(c.cur_transform),
		Alpha: uint32(c.alpha), Usage: uint32(c.usage),
	}, Result(r)
}

func (t Gfx) SurfaceFormats(surface uint64) (formats, spaces []uint32) {
	var f, s [64]C.uint32_t
	n := int(C.vkj_surface_formats(t.p, C.uint64_t(surface), &f[0], &s[0], 64))
	for i := range n {
		formats = append(formats, uint32(f[i]))
		spaces = append(spaces, uint32(s[i]))
	}
	return formats, spaces
}

func (t Gfx) PresentModes(surface uint64) []uint32 {
	var m [16]C.uint32_t
	n := int(C.vkj_present_modes(t.p, C.uint64_t(surface), &m[0], 16))
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(m[i])
	}
	return out
}

// SwapchainDesc is what vkCreateSwapchainKHR needs.
type SwapchainDesc struct {
	Surface, Old                uint64
	Images, Format, Space, W, H uint32
	Transform, Alpha, Mode      uint32
}

func (t Gfx) Swapchain(s *SwapchainDesc) (uint64, Result) {
	var out C.uint64_t
	r := C.vkj_swapchain(t.p, C.uint64_t(s.Surface), C.uint64_t(s.Old), C.uint32_t(s.Images), C.uint32_t(s.Format),
		C.uint32_t(s.Space), C.uint32_t(s.W), C.uint32_t(s.H), C.uint32_t(s.Transform), C.uint32_t(s.Alpha), C.uint32_t(s.Mode), &out)
	return uint64(out), Result(r)
}

func (t Gfx) SwapchainImages(sc uint64) ([]uint64, Result) {
	var imgs [64]C.uint64_t
	var n C.uint32_t
	r := C.vkj_swapchain_images(t.p, C.uint64_t(sc), &imgs[0], 64, &n)
	if r != C.VK_SUCCESS {
		return nil, Result(r)
	}
	if n > 64 {
		return nil, ErrorTooManyObjects
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(imgs[i])
	}
	return out, Success
}

// Acquire writes the image index into *index (a long-lived field: no
// allocation).
func (t Gfx) Acquire(sc uint64, timeoutNS uint64, sem uint64, index *uint32) Result {
	return Result(C.vkj_acquire(t.p, C.uint64_t(sc), C.uint64_t(timeoutNS), C.uint64_t(sem), (*C.uint32_t)(unsafe.Pointer(index))))
}

func (t Gfx) Present(q Queue, sc uint64, index uint32, waitSem uint64) Result {
	return Result(C.vkj_present(t.p, cQueue(q), C.uint64_t(sc), C.uint32_t(index), C.uint64_t(waitSem)))
}
