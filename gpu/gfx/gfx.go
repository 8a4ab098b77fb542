package gfx

import (
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/internal/devhook"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/render"
)

// The graphics shaders' SPIR-V (gfx_shaders/*.spv) is generated from
// gfx_shaders/lit.vert and lit.frag:
//
//go:generate sh gfx_shaders/gen.sh

// SwapchainExtension is the device extension a window target needs: open
// the gpu.Device with it in gpu.Options.DeviceExtensions, and with the window
// system's instance extensions in gpu.Options.InstanceExtensions (package
// gpu/present's DeviceOptions does both).
const SwapchainExtension = "VK_KHR_swapchain"

// Errors of graphics. Draw-time errors are reported by Recorder.End for
// the range, so render.Renderer.Record returns them and the frame is
// discarded (see Graphics.EndFrame); nothing a draw packet holds crashes.
var (
	// ErrUnknownHandle: a packet names a pipeline or mesh that this
	// Graphics did not register.
	ErrUnknownHandle = errors.New("gpu: unknown pipeline or mesh handle")
	// ErrBadDraw: a draw reads outside its mesh (vertices, indices or
	// instances), or uses an instanced pipeline with a mesh that has no
	// instance buffer.
	ErrBadDraw = errors.New("gpu: invalid draw")
	// ErrUnknownJob: a render.JobPacket with a Job this backend does not
	// know (see JobClear).
	ErrUnknownJob = errors.New("gpu: unknown render job")
	// ErrFrameSkipped: BeginFrame found the window's drawable area empty
	// (minimised), or its swapchain out of date twice in a row (while the
	// window is being resized); nothing was recorded or presented. Try
	// again later.
	ErrFrameSkipped = errors.New("gpu: frame skipped: the window has no drawable area")
)

// Surface is the hook through which a window system hands package gfx a
// Vulkan surface, so that package gfx links no window system (package
// gpu/present implements it with GLFW).
type Surface interface {
	// CreateSurface creates a VkSurfaceKHR on the VkInstance handle
	// instance and returns the surface handle. Graphics.Close destroys it.
	CreateSurface(instance unsafe.Pointer) (uint64, error)
	// FramebufferSize returns the drawable size in pixels (0, 0 while
	// minimised). It is called at every BeginFrame, so it should be cheap:
	// return the size last reported by the window system's resize
	// callback.
	FramebufferSize() (width, height int)
}

// GraphicsOptions configures NewGraphics. The zero value is not usable:
// set Width and Height (offscreen) or Surface (window).
type GraphicsOptions struct {
	// Width and Height are the offscreen target's size in pixels. Ignored
	// with a Surface, whose framebuffer size is used.
	Width, Height int
	// Surface, when set, makes the target a window's swapchain; nil makes
	// it an offscreen RGBA8 colour image with a depth buffer, read back
	// after every frame (ReadPixels).
	Surface Surface
	// VSync selects the FIFO present mode (frames wait for the vertical
	// blank). Without it: MAILBOX when available, else IMMEDIATE, else
	// FIFO, the only mode every driver has. See Graphics.PresentMode.
	VSync bool
	// FramesInFlight is how many frames may be recorded or executing at
	// once (default 2, at most MaxFramesInFlight): BeginFrame waits for the
	// frame that used the same resources FramesInFlight frames ago.
	FramesInFlight int
	// FenceTimeout bounds each wait for an earlier frame and for a
	// swapchain image (default 10 s); an expired wait fails BeginFrame
	// with an error wrapping gpu.ErrTimeout.
	FenceTimeout time.Duration
}

// View is the per-frame data every pipeline sees (uniform buffer set 0,
// binding 0): camera and light. DefaultView gives a usable start.
type View struct {
	// ViewProj maps world space to Vulkan clip space (y down, depth 0..1),
	// column-major. For an OpenGL-style projection P (mathgl.Perspective),
	// use VulkanClip(P) times the view matrix.
	ViewProj [16]float32
	// LightDir is the direction the light travels, in world space; it is
	// normalised (zero means straight down).
	LightDir [3]float32
	// LightColor scales the Lambert term; Ambient is added to it.
	LightColor, Ambient [3]float32
	// GroundAmbient, when not zero, makes the ambient light a hemisphere:
	// Ambient comes from above (the sky), GroundAmbient from below (light
	// bounced off the ground), blended by the surface normal's height, so
	// that upward and downward faces differ and shapes read. Zero: Ambient
	// from every direction.
	GroundAmbient [3]float32
	// Eye is the camera's position in world space (for fog).
	Eye [3]float32
	// FogDensity, when positive, fades surfaces into FogColor with their
	// distance d from Eye: the fraction kept is exp(-(d*FogDensity)^2). A
	// ground that ends in fog the colour of the sky (Clear) reads as
	// reaching the horizon. Zero: no fog.
	FogDensity float32
	FogColor   [3]float32
	// Clear is the colour the target is cleared to at the start of the
	// frame (depth is cleared to 1).
	Clear [4]float32
}

// DefaultView returns an identity camera, a white light from the upper
// left front, ambient 0.15 and a dark grey background.
func DefaultView() View {
	return View{
		ViewProj:   [16]float32{0: 1, 5: 1, 10: 1, 15: 1},
		LightDir:   [3]float32{0.4, -0.8, -0.45},
		LightColor: [3]float32{1, 1, 1},
		Ambient:    [3]float32{0.15, 0.15, 0.15},
		Clear:      [4]float32{0.1, 0.1, 0.12, 1},
	}
}

// VulkanClip returns C×p, where C turns an OpenGL clip space (y up, depth
// -1..1, as mathgl.Perspective produces) into Vulkan's (y down, depth 0..1).
// The picture looks the same as under OpenGL, winding included, so
// counter-clockwise triangles stay front faces.
func VulkanClip(p [16]float32) [16]float32 {
	var o [16]float32
	for c := 0; c < 4; c++ {
		x, y, z, w := p[4*c], p[4*c+1], p[4*c+2], p[4*c+3]
		o[4*c] = x
		o[4*c+1] = -y
		o[4*c+2] = 0.5*z + 0.5*w
		o[4*c+3] = w
	}
	return o
}

// frameUniforms is View as the shaders' std140 block Frame (160 bytes).
type frameUniforms struct {
	viewProj      [16]float32
	lightDir      [4]float32
	lightColor    [4]float32
	ambient       [4]float32
	groundAmbient [4]float32
	eyeFog        [4]float32 // xyz eye, w fog density
	fogColor      [4]float32
}

const frameUniformBytes = uint64(unsafe.Sizeof(frameUniforms{}))

// check is gpu.Check for the shim's vk.Result (the same VkResult values
// under the shim's type).
func check(call string, r vk.Result) error { return gpu.Check(call, gpu.Result(r)) }

// pushConstantBytes is the push-constant range of every pipeline:
// render.DrawPacket.PushConstants (mat4 model, vec4 colour).
const pushConstantBytes = render.PushConstantsSize

// GraphicsStats counts what a Graphics did.
type GraphicsStats struct {
	Frames    int // frames submitted (presented, for a window)
	Discarded int // frames whose ranges failed: submitted with the clear only
	Skipped   int // BeginFrame calls that returned ErrFrameSkipped
	Recreated int // swapchain (re)creations after the first
	Draws     int // draws recorded in submitted frames
}

// Graphics draws render's sorted packet streams with Vulkan: it
// implements render.Recorder (one secondary command buffer per range,
// from a command pool per worker and frame in flight, executed in range
// order by one primary command buffer inside a render pass), owns the
// target (an offscreen image or a window's swapchain), the frames in
// flight, and the pipelines and meshes that draw packets name. The package
// documentation (doc.go) gives the design.
//
// Threading: the Recorder methods follow render.Recorder's protocol
// (BeginFrame and EndFrame on the recording thread, the per-range methods
// on scheduler workers, one range per worker at a time). Every other
// method (AddPipeline, AddMesh, NewMesh, SetView, ReadPixels, Wait, Close)
// must be called between frames, by the thread that records, never
// during render.Renderer.Record.
type Graphics struct {
	d    *gpu.Device
	dh   devhook.Device  // d's internals
	hnd  devhook.Handles // d's Vulkan handles
	t    gfxTable
	opts GraphicsOptions

	colorFormat, depthFormat uint32
	depthAspect              uint32
	renderPass               uint64
	setLayout, pipeLayout    uint64
	descPool                 uint64
	maxViewport              [2]uint32

	depth gfxImage
	off   *offscreen
	sc    *swapchain

	frames  []gfxFrame
	cur     int // the frame being recorded, or the next one
	last    int // the last submitted frame, -1 before the first
	inFrame bool
	nranges int
	fb      uint64 // framebuffer of the frame being recorded
	w, h    uint32 // its extent
	clear   [4]float32

	workers []gfxWorker
	pipes   []*gfxPipeline // PipelineID i is pipes[i-1]
	meshes  []*gfxMesh     // MeshID i is meshes[i-1]
	owned   []*gpu.Buffer  // buffers made by NewMesh

	view     View
	uniforms frameUniforms

	stats    GraphicsStats
	broken   error // a failure after which frames cannot go on
	closed   bool
	byDevice bool // closed by gpu.Device.Close (OnClose), not by Close
	noSubmit bool // benchmarks of recording alone: EndFrame records but does not submit
}

// gfxImage is an image with its memory and view.
type gfxImage struct {
	img, mem, view uint64
}

func (g *Graphics) newImage(format, w, h, usage, aspect uint32) (gfxImage, error) {
	var im gfxImage
	img, size, bits, r := g.t.Image(format, w, h, usage)
	im.img = img
	if err := check("vkCreateImage", r); err != nil {
		g.destroyImage(&im)
		return gfxImage{}, fmt.Errorf("%w (%dx%d, format %d)", err, w, h, format)
	}
	ti, ok := g.dh.FindMemType(bits, vk.MemoryPropertyDeviceLocalBit, 0)
	if !ok {
		ti, ok = g.dh.FindMemType(bits, 0, 0)
	}
	if !ok {
		g.destroyImage(&im)
		return gfxImage{}, fmt.Errorf("gpu: no memory type for a %dx%d image (types %#x)", w, h, bits)
	}
	mem, r := g.t.ImageBind(img, size, uint32(ti))
	im.mem = mem
	if err := check("vkAllocateMemory/vkBindImageMemory", r); err != nil {
		g.destroyImage(&im)
		return gfxImage{}, fmt.Errorf("%w (%d bytes)", err, size)
	}
	view, r := g.t.ImageView(img, format, aspect)
	im.view = view
	if err := check("vkCreateImageView", r); err != nil {
		g.destroyImage(&im)
		return gfxImage{}, err
	}
	return im, nil
}

func (g *Graphics) destroyImage(im *gfxImage) {
	g.t.Destroy(vk.ObjImageView, &im.view)
	g.t.Destroy(vk.ObjImage, &im.img)
	g.t.Destroy(vk.ObjMemory, &im.mem)
}

// offscreen is an offscreen target: one colour image and framebuffer
// shared by the frames in flight (the render pass's external dependency
// orders a frame after the previous one's read-back copy), and one
// read-back buffer per frame.
type offscreen struct {
	color gfxImage
	fb    uint64
}

// gfxFrame is one frame in flight's resources. Between its submission and
// the next BeginFrame that reuses it, they belong to the GPU.
type gfxFrame struct {
	fence      uint64 // created signalled; reset just before each submit
	primary    vk.CommandBuffer
	pools      []uint64             // [0]: the primary's pool; [1+w]: worker w's pool of secondaries
	secs       [][]vk.CommandBuffer // per worker: allocated secondaries, reused every frame
	used       []int                // per worker: secondaries taken this frame
	ranges     []vk.CommandBuffer   // by range index: the secondary that recorded it
	acquireSem uint64               // window: signalled when the swapchain image is ready
	ubo        devhook.Block        // frameUniforms, host-visible
	set        uint64               // descriptor set of ubo
	readback   devhook.Block        // offscreen: the colour image's pixels after the frame
}

// gfxWorker is the recording state of one worker (one range at a time),
// padded against false sharing.
type gfxWorker struct {
	cb     vk.CommandBuffer
	pipe   *gfxPipeline
	mesh   *gfxMesh
	err    error
	draws  int
	active bool
	culled bool // a zero-area viewport is set: draws are skipped
	_      [64]byte
}

func (w *gfxWorker) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// MaxFramesInFlight bounds GraphicsOptions.FramesInFlight: each frame in
// flight holds its own command buffers, uniform buffer and read-back
// memory, and more than a few only add latency.
const MaxFramesInFlight = 16

// NewGraphics creates a Graphics on d drawing into an offscreen image of
// opts.Width × opts.Height, or into opts.Surface's swapchain. It creates
// the render pass, the shared pipeline layout, the target and the frames
// in flight; pipelines and meshes are added with AddPipeline and AddMesh
// (or NewMesh). Close it when done; d's Close closes it if it is still
// open.
func NewGraphics(d *gpu.Device, opts GraphicsOptions) (*Graphics, error) {
	dh := devhook.DeviceOf(d)
	if err := dh.Usable(); err != nil {
		return nil, err
	}
	// Zero means the default; negative values are mistakes.
	if opts.FramesInFlight < 0 || opts.FramesInFlight > MaxFramesInFlight {
		return nil, fmt.Errorf("gpu: NewGraphics: GraphicsOptions.FramesInFlight %d: want 0 (default 2) up to %d", opts.FramesInFlight, MaxFramesInFlight)
	}
	if opts.FenceTimeout < 0 {
		return nil, fmt.Errorf("gpu: NewGraphics: GraphicsOptions.FenceTimeout %v: want 0 (default 10 s) or more", opts.FenceTimeout)
	}
	if opts.FramesInFlight == 0 {
		opts.FramesInFlight = 2
	}
	if opts.FenceTimeout <= 0 {
		opts.FenceTimeout = 10 * time.Second
	}
	if opts.Surface == nil && (opts.Width <= 0 || opts.Height <= 0 || opts.Width > 16384 || opts.Height > 16384) {
		return nil, fmt.Errorf("gpu: NewGraphics: offscreen size %dx%d outside 1..16384 (or set a Surface)", opts.Width, opts.Height)
	}
	if opts.Surface != nil && !hasString(dh.DeviceExtensions(), SwapchainExtension) {
		return nil, fmt.Errorf("gpu: NewGraphics: a window target needs the device extension %s and the window's instance extensions: open the gpu.Device with them (gpu/present.DeviceOptions)", SwapchainExtension)
	}
	if dh.MaxPushConstants() < pushConstantBytes {
		return nil, fmt.Errorf("gpu: NewGraphics: the device has %d bytes of push constants, draws need %d", dh.MaxPushConstants(), pushConstantBytes)
	}
	h := dh.Handles()
	t, err := newGfxTable(h, opts.Surface != nil)
	if err != nil {
		return nil, err
	}
	g := &Graphics{d: d, dh: dh, hnd: h, t: t, opts: opts, last: -1}
	g.SetView(DefaultView())
	ok := false
	defer func() {
		if !ok {
			g.destroy()
		}
	}()
	g.maxViewport = dh.MaxViewport()

	if err := g.pickDepthFormat(); err != nil {
		return nil, err
	}
	final := uint32(vk.ImageLayoutTransferSrcOptimal)
	if opts.Surface != nil {
		if err := g.openSurface(); err != nil {
			return nil, err
		}
		final = uint32(vk.ImageLayoutPresentSrc)
	} else {
		g.colorFormat = uint32(vk.FormatR8g8b8a8Unorm)
	}
	rp, r := t.RenderPass(g.colorFormat, g.depthFormat, final)
	g.renderPass = rp
	if err := check("vkCreateRenderPass", r); err != nil {
		return nil, err
	}
	n := uint32(opts.FramesInFlight)
	g.setLayout, g.pipeLayout, g.descPool, r = t.FrameLayouts(pushConstantBytes, n)
	if err := check("vkCreateDescriptorSetLayout/vkCreatePipelineLayout/vkCreateDescriptorPool", r); err != nil {
		return nil, err
	}
	if opts.Surface != nil {
		g.sc.seenW, g.sc.seenH = opts.Surface.FramebufferSize()
		if err := g.createSwapchain(); err != nil && !errors.Is(err, ErrFrameSkipped) {
			return nil, err
		}
	} else if err := g.createOffscreen(uint32(opts.Width), uint32(opts.Height)); err != nil {
		return nil, err
	}
	g.frames = make([]gfxFrame, n)
	for i := range g.frames {
		if err := g.newFrame(&g.frames[i]); err != nil {
			return nil, err
		}
	}
	if err := dh.OnClose(g, g.closeForDevice); err != nil {
		return nil, err
	}
	ok = true
	return g, nil
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pickDepthFormat picks the first depth format the device can attach.
func (g *Graphics) pickDepthFormat() error {
	for _, f := range []vk.Format{vk.FormatD32Sfloat, vk.FormatD32SfloatS8Uint, vk.FormatD24UnormS8Uint, vk.FormatD16Unorm} {
		if g.t.FormatFeatures(uint32(f))&uint32(vk.FormatFeatureDepthStencilAttachmentBit) != 0 {
			g.depthFormat = uint32(f)
			g.depthAspect = uint32(vk.ImageAspectDepthBit)
			if f == vk.FormatD32SfloatS8Uint || f == vk.FormatD24UnormS8Uint {
				g.depthAspect |= uint32(vk.ImageAspectStencilBit)
			}
			return nil
		}
	}
	return fmt.Errorf("gpu: NewGraphics: the device supports none of the depth formats D32, D32S8, D24S8, D16 as attachments")
}

func (g *Graphics) createOffscreen(w, h uint32) error {
	o := &offscreen{}
	g.off = o
	var err error
	o.color, err = g.newImage(g.colorFormat, w, h, uint32(vk.ImageUsageColorAttachmentBit|vk.ImageUsageTransferSrcBit), uint32(vk.ImageAspectColorBit))
	if err != nil {
		return err
	}
	if g.depth, err = g.newImage(g.depthFormat, w, h, uint32(vk.ImageUsageDepthStencilAttachmentBit), g.depthAspect); err != nil {
		return err
	}
	fb, r := g.t.Framebuffer(g.renderPass, o.color.view, g.depth.view, w, h)
	o.fb = fb
	if err := check("vkCreateFramebuffer", r); err != nil {
		return err
	}
	g.w, g.h = w, h
	return nil
}

func (g *Graphics) newFrame(f *gfxFrame) error {
	t := g.t
	var r vk.Result
	if f.fence, r = t.Fence(true); r != vk.Success {
		return check("vkCreateFence", r)
	}
	pool, r := t.CommandPool(g.hnd.QueueFamily)
	if r != vk.Success {
		return check("vkCreateCommandPool", r)
	}
	f.pools = append(f.pools, pool)
	cbs := make([]vk.CommandBuffer, 1)
	if err := check("vkAllocateCommandBuffers", t.AllocCBs(pool, false, cbs)); err != nil {
		return err
	}
	f.primary = cbs[0]
	if g.sc != nil {
		if f.acquireSem, r = t.Semaphore(); r != vk.Success {
			return check("vkCreateSemaphore", r)
		}
	}
	var err error
	if f.ubo, err = g.dh.NewStagingBlock(frameUniformBytes); err != nil {
		return err
	}
	if f.set, r = t.FrameSet(g.descPool, g.setLayout, f.ubo.Buf, frameUniformBytes); r != vk.Success {
		return check("vkAllocateDescriptorSets", r)
	}
	if g.off != nil {
		if f.readback, err = g.dh.NewStagingBlock(uint64(g.w) * uint64(g.h) * 4); err != nil {
			return err
		}
	}
	return nil
}

func (g *Graphics) destroyFrame(f *gfxFrame) {
	t := g.t
	for i := range f.pools {
		t.Destroy(vk.ObjCommandPool, &f.pools[i]) // frees its command buffers
	}
	f.pools, f.secs, f.used, f.ranges, f.primary = nil, nil, nil, nil, 0
	t.Destroy(vk.ObjFence, &f.fence)
	t.Destroy(vk.ObjSemaphore, &f.acquireSem)
	g.dh.FreeBlock(&f.ubo)
	g.dh.FreeBlock(&f.readback)
	f.set = 0 // freed with the descriptor pool
}

// SetView sets the camera, light and clear colour of the frames that
// begin from now on.
func (g *Graphics) SetView(v View) {
	g.view = v
	u := &g.uniforms
	u.viewProj = v.ViewProj
	l := v.LightDir
	n := float32(math.Sqrt(float64(l[0]*l[0] + l[1]*l[1] + l[2]*l[2])))
	if n == 0 || math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		l, n = [3]float32{0, -1, 0}, 1
	}
	u.lightDir = [4]float32{l[0] / n, l[1] / n, l[2] / n, 0}
	u.lightColor = [4]float32{v.LightColor[0], v.LightColor[1], v.LightColor[2], 1}
	u.ambient = [4]float32{v.Ambient[0], v.Ambient[1], v.Ambient[2], 1}
	ga := v.GroundAmbient
	if ga == ([3]float32{}) {
		ga = v.Ambient
	}
	u.groundAmbient = [4]float32{ga[0], ga[1], ga[2], 1}
	fog := v.FogDensity
	if !(fog > 0) || math.IsInf(float64(fog), 0) {
		fog = 0 // NaN, negative or infinite: no fog
	}
	u.eyeFog = [4]float32{v.Eye[0], v.Eye[1], v.Eye[2], fog}
	u.fogColor = [4]float32{v.FogColor[0], v.FogColor[1], v.FogColor[2], 1}
}

// View returns the view set last.
func (g *Graphics) View() View { return g.view }

// Size returns the target's size in pixels (a window's current swapchain
// extent; 0×0 while minimised).
func (g *Graphics) Size() (width, height int) { return int(g.w), int(g.h) }

// Offscreen reports whether the target is an offscreen image.
func (g *Graphics) Offscreen() bool { return g.off != nil }

// Stats returns the counters.
func (g *Graphics) Stats() GraphicsStats { return g.stats }

// Device returns the Graphics' device.
func (g *Graphics) Device() *gpu.Device { return g.d }

// ensureWorkers makes room for n workers in the recording state and in
// frame f (pools of secondaries). It allocates only when n grows.
func (g *Graphics) ensureWorkers(f *gfxFrame, n int) error {
	if len(g.workers) < n {
		g.workers = append(g.workers, make([]gfxWorker, n-len(g.workers))...)
	}
	for len(f.pools) < 1+n {
		pool, r := g.t.CommandPool(g.hnd.QueueFamily)
		if err := check("vkCreateCommandPool", r); err != nil {
			return err
		}
		f.pools = append(f.pools, pool)
	}
	if len(f.secs) < n {
		f.secs = append(f.secs, make([][]vk.CommandBuffer, n-len(f.secs))...)
		f.used = append(f.used, make([]int, n-len(f.used))...)
	}
	return nil
}

// failVk turns a failed result into an error, marking the device lost
// when the result says so.
func (g *Graphics) failVk(call string, r vk.Result) error {
	err := check(call, r)
	if r == vk.ErrorDeviceLost {
		g.dh.MarkLost(err)
	}
	return err
}

// usable returns an error wrapping gpu.ErrClosed when the Graphics or its
// Device was closed (the Device's Close closes the Graphics): every Vulkan
// handle it held is then freed, and a call through one crashed the
// process.
func (g *Graphics) usable(what string) error {
	switch {
	case g.byDevice || (!g.closed && g.dh.Closed()):
		return fmt.Errorf("%w: Graphics.%s after gpu.Device.Close", gpu.ErrClosed, what)
	case g.closed || !g.t.Valid():
		return fmt.Errorf("%w: Graphics.%s after Graphics.Close", gpu.ErrClosed, what)
	}
	return nil
}

// Wait waits until every submitted frame has completed. It fails with
// gpu.ErrClosed after Close or the Device's Close.
func (g *Graphics) Wait() error {
	if err := g.usable("Wait"); err != nil {
		return err
	}
	for i := range g.frames {
		f := &g.frames[i]
		if f.fence == 0 {
			continue
		}
		r := g.t.WaitFence(f.fence, uint64(g.opts.FenceTimeout))
		if r == vk.Timeout {
			return fmt.Errorf("%w: frame %d not complete after %v", gpu.ErrTimeout, i, g.opts.FenceTimeout)
		}
		if r != vk.Success {
			return g.failVk("vkWaitForFences", r)
		}
	}
	return nil
}

// ReadPixels waits for the last submitted frame of an offscreen target and
// copies its pixels into img, which must have the target's size (RGBA,
// 8 bits per channel, not premultiplied: the colour attachment's values as
// the shaders wrote them). It allocates nothing.
func (g *Graphics) ReadPixels(img *image.RGBA) error {
	if err := g.usable("ReadPixels"); err != nil {
		return err
	}
	if g.off == nil {
		return errors.New("gpu: ReadPixels: the target is a window; read pixels from an offscreen Graphics")
	}
	if g.last < 0 {
		return errors.New("gpu: ReadPixels: no frame was submitted yet")
	}
	w, h := int(g.w), int(g.h)
	if img == nil || img.Rect.Dx() != w || img.Rect.Dy() != h {
		return fmt.Errorf("gpu: ReadPixels: the image must be %dx%d", w, h)
	}
	f := &g.frames[g.last]
	if r := g.t.WaitFence(f.fence, uint64(g.opts.FenceTimeout)); r != vk.Success {
		if r == vk.Timeout {
			return fmt.Errorf("%w: ReadPixels: the frame is not complete after %v", gpu.ErrTimeout, g.opts.FenceTimeout)
		}
		return g.failVk("vkWaitForFences", r)
	}
	src := f.readback.Mapped
	for y := range h {
		o := img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y)
		copy(img.Pix[o:o+4*w], src[4*w*y:4*w*(y+1)])
	}
	return nil
}

// Image returns the last submitted frame of an offscreen target as a new
// image (see ReadPixels).
func (g *Graphics) Image() (*image.RGBA, error) {
	img := image.NewRGBA(image.Rect(0, 0, int(g.w), int(g.h)))
	if err := g.ReadPixels(img); err != nil {
		return nil, err
	}
	return img, nil
}

// WritePNG encodes the last submitted frame of an offscreen target as a
// PNG (RGBA, 8 bits per channel) to w.
func (g *Graphics) WritePNG(w io.Writer) error {
	img, err := g.Image()
	if err != nil {
		return err
	}
	return png.Encode(w, img)
}

// Close waits for the frames in flight and destroys everything the
// Graphics owns: frames, pipelines, meshes (dropping its references to
// their buffers; buffers made by NewMesh are closed), the target and, for
// a window, the swapchain and the surface. gpu.Device.Close closes a
// Graphics still open the same way (then this Close returns nil), so
// nothing leaks whichever is closed first; no goroutine may use the
// Graphics during the Device's Close. Calling Close again returns nil.
func (g *Graphics) Close() error {
	if g.closed {
		return nil
	}
	if g.dh.Closed() {
		// Only while the Device's Close runs on another goroutine, which
		// closes this Graphics itself (the caller's race): leave that to it.
		return errors.New("gpu: Graphics.Close during gpu.Device.Close on another goroutine")
	}
	g.dh.OnClose(g, nil)
	return g.closeNow()
}

// closeForDevice is the Graphics' OnClose hook: gpu.Device.Close calls it
// when the Graphics is still open, before it frees the device.
func (g *Graphics) closeForDevice() error {
	if g.closed {
		return nil
	}
	g.byDevice = true
	if err := g.closeNow(); err != nil {
		return fmt.Errorf("gpu: closing a Graphics still open: %w", err)
	}
	return nil
}

// closeNow waits for the queue and destroys everything.
func (g *Graphics) closeNow() error {
	g.closed = true
	var err error
	g.dh.QueueLock().Lock()
	r := g.t.QueueWaitIdle(g.hnd.Queue)
	g.dh.QueueLock().Unlock()
	if r != vk.Success && r != vk.ErrorDeviceLost {
		err = check("vkQueueWaitIdle", r)
	}
	g.destroy()
	return err
}

// destroy frees whatever exists (the GPU is idle or lost).
func (g *Graphics) destroy() {
	t := g.t
	if !t.Valid() {
		return
	}
	for i := range g.frames {
		g.destroyFrame(&g.frames[i])
	}
	g.frames = nil
	g.inFrame = false // a frame being recorded is dropped
	g.workers = nil
	for _, p := range g.pipes {
		if p != nil {
			t.Destroy(vk.ObjPipeline, &p.pipe)
		}
	}
	g.pipes = nil
	for _, m := range g.meshes {
		if m != nil {
			m.release()
		}
	}
	g.meshes = nil
	for _, b := range g.owned {
		b.Close()
	}
	g.owned = nil
	if g.sc != nil {
		g.destroySwapchain(g.sc, true)
		t.Destroy(vk.ObjSurface, &g.sc.surface)
		g.sc = nil
	}
	if g.off != nil {
		t.Destroy(vk.ObjFramebuffer, &g.off.fb)
		g.destroyImage(&g.off.color)
		g.off = nil
	}
	g.destroyImage(&g.depth)
	t.Destroy(vk.ObjDescPool, &g.descPool)
	t.Destroy(vk.ObjPipeLayout, &g.pipeLayout)
	t.Destroy(vk.ObjSetLayout, &g.setLayout)
	t.Destroy(vk.ObjRenderPass, &g.renderPass)
	t.Free()
	g.t = gfxTable{}
}
