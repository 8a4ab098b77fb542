// Package present opens windows with GLFW for package gpu/gfx's window
// targets. It is the only package of the project that links GLFW and X11,
// so command-line tools that render offscreen or only compute do not; it
// hands package gfx a Vulkan surface through the gfx.Surface hook and
// makes no Vulkan call itself (package gfx destroys the surface).
//
// # Using it
//
//	win, err := present.Open(present.Config{Width: 1280, Height: 720, Title: "crowd"})
//	if errors.Is(err, present.ErrNoDisplay) {
//		// no display: render offscreen (gfx.GraphicsOptions{Width, Height})
//	}
//	defer win.Close()
//	dev, err := gpu.Open(win.DeviceOptions(gpu.Options{}))  // adds the surface and swapchain extensions
//	g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Surface: win, VSync: true})
//	for !win.ShouldClose() {
//		present.PollEvents()          // resize events reach gpu through FramebufferSize
//		... renderer.Record(ctx, sorted, g) ...   // BeginFrame recreates the swapchain after a resize
//	}
//
// # Threads
//
// GLFW must be called from the process's main thread; this package's init
// locks the main goroutine to it (runtime.LockOSThread). A program whose
// main goroutine calls Open, PollEvents and the Window methods needs
// nothing else. A program (or a TestMain) that wants to call them from
// other goroutines runs its work through Main, which serves those calls
// on the main thread. FramebufferSize and CreateSurface may be called from
// any goroutine (they make no GLFW call that needs the main thread).
package present

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-gl/glfw/v3.3/glfw"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gfx"
)

func init() { runtime.LockOSThread() }

// ErrNoDisplay is returned by Open when there is no display to open a
// window on (DISPLAY unset, or no X server answering there). Callers fall
// back to an offscreen target.
var ErrNoDisplay = errors.New("present: no display (DISPLAY is unset or no X server answers): render offscreen instead")

// Config configures Open.
type Config struct {
	Width, Height int    // window size in screen coordinates (default 1280×720)
	Title         string // default "vkjobs"
	// FixedSize makes the window not resizable by the user (it can still
	// be resized with SetSize).
	FixedSize bool
	// Hidden creates the window invisible (for tests).
	Hidden bool
	// CloseOnEscape makes the Escape key ask the window to close, as its
	// close button does (ShouldClose then reports true).
	CloseOnEscape bool
}

// Window is a GLFW window without a graphics API context, for Vulkan. It
// implements gfx.Surface.
type Window struct {
	win      *glfw.Window
	fbW, fbH atomic.Int32 // framebuffer size, from the size callback
	resizes  atomic.Int64
	// closed is set by Close before the GLFW window is destroyed; the
	// methods check it on the main thread, where Close destroys the
	// window, so none touches a destroyed window. It is atomic because
	// CreateSurface may run on any goroutine.
	closed atomic.Bool
}

var _ gfx.Surface = (*Window)(nil)

// glfw state: initialised while at least one window is open. glfwUsers
// changes only on the main thread (in Open's and Close's calls there),
// so a call running on the main thread may read it without the lock.
var (
	glfwMu    sync.Mutex
	glfwUsers int
)

// Main runs f on a new goroutine while the calling goroutine, which must
// be the main goroutine (locked to the main thread by this package's init;
// call Main from main or TestMain, nowhere else), runs this package's GLFW
// calls for it; it returns when f returns. While Main runs, Open,
// PollEvents and Window methods called from any goroutine are executed on
// the main thread.
func Main(f func()) {
	done := make(chan struct{})
	serving.Store(true)
	go func() {
		defer close(done)
		f()
	}()
	for {
		select {
		case r := <-mainq:
			r.run()
			r.done <- struct{}{}
		case <-done:
			serving.Store(false)
			return
		}
	}
}

var (
	mainq   = make(chan *request)
	serving atomic.Bool
	free    = make(chan *request, 16) // idle requests, reused
)

func getRequest() *request {
	select {
	case r := <-free:
		return r
	default:
		return &request{done: make(chan struct{}, 1)}
	}
}

func putRequest(r *request) {
	r.fn, r.w = nil, nil
	select {
	case free <- r:
	default:
	}
}

// request is one call for the main thread. The per-frame calls
// (PollEvents, ShouldClose, SetTitle) are operations without closures, and requests
// are reused, so a frame's window calls allocate nothing.
type request struct {
	fn   func() // opFunc
	op   int
	w    *Window
	b    bool   // opShouldClose's result
	s    string // opSetTitle's title
	done chan struct{}
}

const (
	opFunc = iota
	opPoll
	opShouldClose
	opSetTitle
)

func (r *request) run() {
	switch r.op {
	case opPoll:
		if glfwUsers > 0 { // GLFW panics when it is not initialised
			glfw.PollEvents()
		}
	case opShouldClose:
		r.b = r.w.closed.Load() || r.w.win.ShouldClose()
	case opSetTitle:
		if !r.w.closed.Load() {
			r.w.win.SetTitle(r.s)
		}
	default:
		r.fn()
	}
}

// call runs r on the main thread: through Main's loop when it serves,
// else directly (the caller is then the main goroutine, by this package's
// contract).
func call(r *request) {
	if !serving.Load() {
		r.run()
		return
	}
	mainq <- r
	<-r.done
}

// onMain runs fn on the main thread (see call).
func onMain(fn func()) {
	r := getRequest()
	r.op, r.fn = opFunc, fn
	call(r)
	putRequest(r)
}

// displayReachable reports whether an X server answers at DISPLAY, so that
// glfw.Init (which only logs a failure to open the display) is not called
// without one.
func displayReachable() error {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return nil // no X server involved: GLFW reports a missing session itself
	}
	disp := os.Getenv("DISPLAY")
	if disp == "" {
		return fmt.Errorf("%w (DISPLAY is unset)", ErrNoDisplay)
	}
	host, num, ok := strings.Cut(disp, ":")
	if !ok {
		return fmt.Errorf("%w (DISPLAY=%q is not host:display)", ErrNoDisplay, disp)
	}
	num, _, _ = strings.Cut(num, ".")
	var network, addr string
	if host == "" || host == "unix" {
		network, addr = "unix", "/tmp/.X11-unix/X"+num
	} else {
		var n int
		if _, err := fmt.Sscanf(num, "%d", &n); err != nil {
			return fmt.Errorf("%w (DISPLAY=%q)", ErrNoDisplay, disp)
		}
		network, addr = "tcp", net.JoinHostPort(host, fmt.Sprint(6000+n))
	}
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return fmt.Errorf("%w (DISPLAY=%q: %v)", ErrNoDisplay, disp, err)
	}
	c.Close()
	return nil
}

// Open opens a window. Without a display it returns an error wrapping
// ErrNoDisplay and initialises nothing.
func Open(cfg Config) (*Window, error) {
	if err := displayReachable(); err != nil {
		return nil, err
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		cfg.Width, cfg.Height = 1280, 720
	}
	if cfg.Title == "" {
		cfg.Title = "vkjobs"
	}
	var w *Window
	var err error
	onMain(func() { w, err = open(cfg) })
	return w, err
}

func open(cfg Config) (*Window, error) {
	glfwMu.Lock()
	defer glfwMu.Unlock()
	if glfwUsers == 0 {
		if err := glfw.Init(); err != nil {
			return nil, fmt.Errorf("present: glfw.Init: %w", err)
		}
	}
	glfwUsers++
	ok := false
	defer func() {
		if !ok {
			glfwUsers--
			if glfwUsers == 0 {
				glfw.Terminate()
			}
		}
	}()
	if !glfw.VulkanSupported() {
		return nil, errors.New("present: GLFW found no Vulkan loader (Debian: libvulkan1)")
	}
	glfw.DefaultWindowHints()
	glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
	glfw.WindowHint(glfw.Resizable, boolHint(!cfg.FixedSize))
	glfw.WindowHint(glfw.Visible, boolHint(!cfg.Hidden))
	gw, err := glfw.CreateWindow(cfg.Width, cfg.Height, cfg.Title, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("present: glfw.CreateWindow: %w", err)
	}
	w := &Window{win: gw}
	fw, fh := gw.GetFramebufferSize()
	w.fbW.Store(int32(fw))
	w.fbH.Store(int32(fh))
	gw.SetFramebufferSizeCallback(func(_ *glfw.Window, width, height int) {
		w.fbW.Store(int32(width))
		w.fbH.Store(int32(height))
		w.resizes.Add(1)
	})
	if cfg.CloseOnEscape {
		gw.SetKeyCallback(func(gw *glfw.Window, key glfw.Key, _ int, action glfw.Action, _ glfw.ModifierKey) {
			if key == glfw.KeyEscape && action == glfw.Press {
				gw.SetShouldClose(true)
			}
		})
	}
	ok = true
	return w, nil
}

func boolHint(b bool) int {
	if b {
		return glfw.True
	}
	return glfw.False
}

// InstanceExtensions returns the Vulkan instance extensions the window
// system needs for surfaces (VK_KHR_surface and the platform's); nil
// after Close.
func (w *Window) InstanceExtensions() []string {
	var exts []string
	onMain(func() {
		if !w.closed.Load() {
			exts = w.win.GetRequiredInstanceExtensions()
		}
	})
	return exts
}

// DeviceOptions returns o with the window's instance extensions and
// gfx.SwapchainExtension added, for gpu.Open.
func (w *Window) DeviceOptions(o gpu.Options) gpu.Options {
	add := func(list []string, names ...string) []string {
		list = append([]string(nil), list...)
		for _, n := range names {
			found := false
			for _, x := range list {
				found = found || x == n
			}
			if !found {
				list = append(list, n)
			}
		}
		return list
	}
	o.InstanceExtensions = add(o.InstanceExtensions, w.InstanceExtensions()...)
	o.DeviceExtensions = add(o.DeviceExtensions, gfx.SwapchainExtension)
	return o
}

// CreateSurface implements gfx.Surface: glfwCreateWindowSurface on the
// VkInstance handle instance. Package gpu owns (and destroys) the surface.
func (w *Window) CreateSurface(instance unsafe.Pointer) (uint64, error) {
	if w.closed.Load() {
		return 0, errors.New("present: CreateSurface on a closed window")
	}
	// glfw takes the instance as any pointer (it reads it with reflect)
	// and returns the address of the VkSurfaceKHR it wrote, as a uintptr;
	// read the handle at once. (The uintptr is reinterpreted through its
	// own address, which go vet accepts; it points at memory glfw
	// allocated for the result.)
	p, err := w.win.CreateWindowSurface((*byte)(instance), nil)
	if err != nil {
		return 0, fmt.Errorf("present: glfwCreateWindowSurface: %w", err)
	}
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	return *(*uint64)(ptr), nil
}

// FramebufferSize implements gfx.Surface: the drawable size in pixels
// last reported by GLFW's framebuffer-size callback (0×0 while
// minimised). It makes no GLFW call.
func (w *Window) FramebufferSize() (width, height int) {
	return int(w.fbW.Load()), int(w.fbH.Load())
}

// Resizes returns how many framebuffer-size events arrived.
func (w *Window) Resizes() int64 { return w.resizes.Load() }

// SetSize resizes the window (screen coordinates). The new framebuffer
// size arrives with a later PollEvents. After Close it does nothing.
func (w *Window) SetSize(width, height int) {
	onMain(func() {
		if !w.closed.Load() {
			w.win.SetSize(width, height)
		}
	})
}

// ShouldClose reports whether the user asked to close the window; true
// after Close.
func (w *Window) ShouldClose() bool {
	r := getRequest()
	r.op, r.w = opShouldClose, w
	call(r)
	b := r.b
	putRequest(r)
	return b
}

// SetTitle sets the window's title (e.g. frame statistics). After Close
// it does nothing.
func (w *Window) SetTitle(title string) {
	r := getRequest()
	r.op, r.w, r.s = opSetTitle, w, title
	call(r)
	r.s = ""
	putRequest(r)
}

// Close destroys the window (after the gfx.Graphics that draws into it was
// closed) and, with the last window, terminates GLFW. Calling it again
// does nothing, and so does calling it on a nil *Window (the result of a
// failed Open), so that `defer win.Close()` is safe either way. Its other
// methods stay safe to call after Close: ShouldClose reports true,
// InstanceExtensions returns nil, CreateSurface fails, and the others do
// nothing.
func (w *Window) Close() {
	if w == nil || !w.closed.CompareAndSwap(false, true) {
		return
	}
	onMain(func() {
		w.win.Destroy()
		glfwMu.Lock()
		glfwUsers--
		if glfwUsers == 0 {
			glfw.Terminate()
		}
		glfwMu.Unlock()
	})
}

// PollEvents processes pending window events (resizes, close requests),
// calling the callbacks. Call it once per frame. With no window open it
// does nothing.
func PollEvents() {
	r := getRequest()
	r.op = opPoll
	call(r)
	putRequest(r)
}

// WaitEvents blocks until an event arrives or timeout passes (for a
// minimised window, instead of spinning on skipped frames). With no
// window open no event can arrive: it sleeps for timeout.
func WaitEvents(timeout time.Duration) {
	idle := false
	onMain(func() {
		if glfwUsers > 0 { // GLFW panics when it is not initialised
			glfw.WaitEventsTimeout(timeout.Seconds())
		} else {
			idle = true
		}
	})
	if idle && timeout > 0 {
		time.Sleep(timeout)
	}
}
