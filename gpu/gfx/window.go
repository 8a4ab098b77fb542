package gfx

import (
	"errors"
	"fmt"

	"github.com/vkjobs/vkjobs/gpu"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

// swapchain is a window target: the surface, its swapchain, a framebuffer
// and a "rendering done" semaphore per swapchain image (a present waits on
// the one of its image, so a semaphore is reused only once its image came
// back from the presentation engine).
type swapchain struct {
	surf    Surface
	surface uint64
	handle  uint64
	format  uint32
	space   uint32
	mode    uint32
	w, h    uint32
	images  []uint64
	views   []uint64
	fbs     []uint64
	done    []uint64 // per image
	stale   bool     // out of date or suboptimal: recreate at the next BeginFrame
	seenW   int      // the window's framebuffer size when the swapchain was made
	seenH   int
	index   uint32 // the image acquired for the frame being recorded
	created int
}

// openSurface creates the window's surface and picks its colour format.
func (g *Graphics) openSurface() error {
	s := g.opts.Surface
	surf, err := s.CreateSurface(g.hnd.Instance.Pointer())
	if err != nil {
		return fmt.Errorf("gpu: NewGraphics: creating the window surface: %w", err)
	}
	if surf == 0 {
		return errors.New("gpu: NewGraphics: the window system returned a null surface")
	}
	g.sc = &swapchain{surf: s, surface: surf}
	if !g.t.SurfaceSupport(g.hnd.QueueFamily, surf) {
		return fmt.Errorf("gpu: NewGraphics: queue family %d of %v cannot present to this surface", g.hnd.QueueFamily, g.d.Selection().Chosen)
	}
	formats, spaces := g.t.SurfaceFormats(surf)
	if len(formats) == 0 {
		return errors.New("gpu: NewGraphics: the surface reports no formats")
	}
	// UNORM formats, so that the window shows the same values as an
	// offscreen RGBA8 target (no sRGB encoding by the hardware).
	pick := -1
	for _, want := range []vk.Format{vk.FormatB8g8r8a8Unorm, vk.FormatR8g8b8a8Unorm} {
		for i, f := range formats {
			if pick < 0 && f == uint32(want) && spaces[i] == uint32(vk.ColorSpaceSrgbNonlinear) {
				pick = i
			}
		}
	}
	if pick < 0 {
		if len(formats) == 1 && formats[0] == uint32(vk.FormatUndefined) {
			formats[0] = uint32(vk.FormatB8g8r8a8Unorm) // "any format"
		}
		pick = 0
	}
	g.sc.format, g.sc.space = formats[pick], spaces[pick]
	g.colorFormat = g.sc.format

	modes := g.t.PresentModes(surf)
	g.sc.mode = uint32(vk.PresentModeFifo) // always supported
	if !g.opts.VSync {
		for _, want := range []vk.PresentMode{vk.PresentModeMailbox, vk.PresentModeImmediate} {
			if hasMode(modes, uint32(want)) {
				g.sc.mode = uint32(want)
				break
			}
		}
	}
	return nil
}

func hasMode(modes []uint32, m uint32) bool {
	for _, x := range modes {
		if x == m {
			return true
		}
	}
	return false
}

// PresentMode names the window's present mode ("FIFO", "MAILBOX",
// "IMMEDIATE"), or "offscreen".
func (g *Graphics) PresentMode() string {
	if g.sc == nil {
		return "offscreen"
	}
	switch vk.PresentMode(g.sc.mode) {
	case vk.PresentModeFifo:
		return "FIFO"
	case vk.PresentModeMailbox:
		return "MAILBOX"
	case vk.PresentModeImmediate:
		return "IMMEDIATE"
	}
	return fmt.Sprintf("present mode %d", g.sc.mode)
}

// createSwapchain (re)creates the swapchain at the surface's current size,
// with its framebuffers and the depth image. The GPU must be idle. A zero
// size returns ErrFrameSkipped and leaves no swapchain.
func (g *Graphics) createSwapchain() error {
	sc := g.sc
	t := g.t
	caps, r := t.SurfaceCaps(sc.surface)
	if r != vk.Success {
		return g.failVk("vkGetPhysicalDeviceSurfaceCapabilitiesKHR", r)
	}
	w, h := caps.CurW, caps.CurH
	if w == 0xFFFFFFFF { // the surface size follows the swapchain's
		fw, fh := sc.surf.FramebufferSize()
		w = clampU32(uint32(max(fw, 0)), caps.MinW, caps.MaxW)
		h = clampU32(uint32(max(fh, 0)), caps.MinH, caps.MaxH)
	}
	old := sc.handle
	if old != 0 {
		g.destroySwapchain(sc, false)
	}
	if w == 0 || h == 0 {
		t.Destroy(vk.ObjSwapchain, &sc.handle)
		g.w, g.h = 0, 0
		return ErrFrameSkipped
	}
	images := caps.MinImages + 1
	if caps.MaxImages > 0 && images > caps.MaxImages {
		images = caps.MaxImages
	}
	alpha := uint32(vk.CompositeAlphaOpaqueBit)
	if caps.Alpha&alpha == 0 {
		alpha = caps.Alpha & -caps.Alpha // lowest supported bit
	}
	handle, r := t.Swapchain(&vk.SwapchainDesc{Surface: sc.surface, Old: old, Images: images, Format: sc.format, Space: sc.space,
		W: w, H: h, Transform: caps.CurTransform, Alpha: alpha, Mode: sc.mode})
	if old != 0 {
		t.Destroy(vk.ObjSwapchain, &old)
	}
	sc.handle = handle
	if r != vk.Success {
		sc.handle = 0
		return g.failVk("vkCreateSwapchainKHR", r)
	}
	imgs, r := t.SwapchainImages(handle)
	if r != vk.Success {
		return g.failVk("vkGetSwapchainImagesKHR", r)
	}
	sc.images = imgs
	var err error
	if g.depth, err = g.newImage(g.depthFormat, w, h, uint32(vk.ImageUsageDepthStencilAttachmentBit), g.depthAspect); err != nil {
		return err
	}
	for _, img := range imgs {
		view, r := t.ImageView(img, sc.format, uint32(vk.ImageAspectColorBit))
		if r != vk.Success {
			return check("vkCreateImageView", r)
		}
		sc.views = append(sc.views, view)
		fb, r := t.Framebuffer(g.renderPass, view, g.depth.view, w, h)
		if r != vk.Success {
			return check("vkCreateFramebuffer", r)
		}
		sc.fbs = append(sc.fbs, fb)
		sem, r := t.Semaphore()
		if r != vk.Success {
			return check("vkCreateSemaphore", r)
		}
		sc.done = append(sc.done, sem)
	}
	sc.w, sc.h = w, h
	g.w, g.h = w, h
	sc.stale = false
	if sc.created > 0 {
		g.stats.Recreated++
	}
	sc.created++
	return nil
}

func clampU32(x, lo, hi uint32) uint32 {
	return max(lo, min(x, hi))
}

// destroySwapchain destroys what hangs off the swapchain (framebuffers,
// views, semaphores, the depth image) and, with handle, the swapchain.
func (g *Graphics) destroySwapchain(sc *swapchain, handle bool) {
	t := g.t
	for i := range sc.fbs {
		t.Destroy(vk.ObjFramebuffer, &sc.fbs[i])
	}
	for i := range sc.views {
		t.Destroy(vk.ObjImageView, &sc.views[i])
	}
	for i := range sc.done {
		t.Destroy(vk.ObjSemaphore, &sc.done[i])
	}
	sc.fbs, sc.views, sc.done, sc.images = sc.fbs[:0], sc.views[:0], sc.done[:0], nil
	g.destroyImage(&g.depth)
	if handle {
		t.Destroy(vk.ObjSwapchain, &sc.handle)
	}
}

// recreate waits for the GPU and recreates the swapchain.
func (g *Graphics) recreate() error {
	g.dh.QueueLock().Lock()
	r := g.t.QueueWaitIdle(g.hnd.Queue)
	g.dh.QueueLock().Unlock()
	if r != vk.Success {
		return g.failVk("vkQueueWaitIdle", r)
	}
	return g.createSwapchain()
}

// acquire prepares a window frame: it recreates the swapchain when the
// window was resized or the swapchain went out of date, and acquires an
// image (signalling sem). It returns ErrFrameSkipped while the window has
// no drawable area, or when the swapchain is out of date twice in a row.
func (g *Graphics) acquire(sem uint64) error {
	sc := g.sc
	fw, fh := sc.surf.FramebufferSize()
	if fw <= 0 || fh <= 0 {
		return ErrFrameSkipped
	}
	// Recreate after a resize event (the size the window reported changed
	// since the swapchain was made; the swapchain itself takes the
	// surface's current extent, which may already differ) or when the
	// swapchain went out of date.
	if sc.handle == 0 || sc.stale || fw != sc.seenW || fh != sc.seenH {
		sc.seenW, sc.seenH = fw, fh
		if err := g.recreate(); err != nil {
			return err
		}
	}
	for try := 0; ; try++ {
		r := g.t.Acquire(sc.handle, uint64(g.opts.FenceTimeout), sem, &sc.index)
		switch {
		case r == vk.Success:
			return nil
		case r == vk.SuboptimalKHR:
			sc.stale = true // usable; recreate next frame
			return nil
		case r == vk.ErrorOutOfDateKHR && try == 0:
			if err := g.recreate(); err != nil {
				return err
			}
		case r == vk.ErrorOutOfDateKHR:
			// Out of date again right after recreating (drivers do this
			// while a window is being dragged or resized): skip the frame
			// (no image was acquired, sem stays unsignalled) and recreate
			// at the next one.
			sc.stale = true
			return fmt.Errorf("%w (the swapchain went out of date again right after it was recreated)", ErrFrameSkipped)
		case r == vk.Timeout || r == vk.NotReady:
			return fmt.Errorf("%w: no swapchain image after %v", gpu.ErrTimeout, g.opts.FenceTimeout)
		default:
			return g.failVk("vkAcquireNextImageKHR", r)
		}
	}
}
