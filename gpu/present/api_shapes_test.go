package present_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gfx"
	"github.com/vkjobs/vkjobs/gpu/present"
	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

// minimisable is a gfx.Surface over a window whose drawable area can be
// made 0×0, as a window system reports a minimised window.
type minimisable struct {
	w   *present.Window
	min atomic.Bool
}

func (m *minimisable) CreateSurface(instance unsafe.Pointer) (uint64, error) {
	return m.w.CreateSurface(instance)
}

func (m *minimisable) FramebufferSize() (int, int) {
	if m.min.Load() {
		return 0, 0
	}
	return m.w.FramebufferSize()
}

// openWindow opens a hidden window (under Xvfb, see TestMain) or skips.
func openWindow(t *testing.T, w, h int) *present.Window {
	t.Helper()
	needDisplay(t)
	win, err := present.Open(present.Config{Width: w, Height: h, Title: "vkjobs review", Hidden: true})
	must(t, err)
	return win
}

// windowDevice opens a validated device for win; cleanup closes it and
// fails the test on any validation message.
func windowDevice(t *testing.T, win *present.Window) *gpu.Device {
	t.Helper()
	log := &msgLog{}
	dev, err := gpu.Open(win.DeviceOptions(gpu.Options{Validation: true, OnMessage: log.add}))
	must(t, err)
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, m := range log.msgs {
			t.Errorf("validation: %v", m)
		}
	})
	return dev
}

// TestWindowMinimiseRestoreFramesInFlight: with 1, 2 and 3 frames in
// flight, frames drawn into a window, then a minimised stretch (0×0:
// BeginFrame returns ErrFrameSkipped, counted in Stats.Skipped), then
// frames again; Graphics.Close twice; no validation message.
func TestWindowMinimiseRestoreFramesInFlight(t *testing.T) {
	win := openWindow(t, 96, 64)
	defer win.Close()
	dev := windowDevice(t, win)
	s, err := sched.New(sched.Config{Workers: 2})
	must(t, err)
	defer s.Close()
	main, err := s.RegisterThread("main")
	must(t, err)
	rr, err := render.New(s, render.Config{Ranges: 3, MinRange: 1})
	must(t, err)
	for _, n := range []int{1, 2, 3} {
		surf := &minimisable{w: win}
		g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Surface: surf, FramesInFlight: n})
		must(t, err)
		reg := render.NewRegistry()
		pipe, err := g.AddPipeline(reg, gfx.Pipeline{Name: "lit"})
		must(t, err)
		verts, idx := cube()
		box, err := g.NewMesh(reg, "box", verts, idx, nil)
		must(t, err)
		ctx, err := render.NewContext(16 * render.DrawRecordSize)
		must(t, err)
		for i := range 4 {
			d := render.DrawPacket{Pipeline: pipe, Mesh: box, VertexCount: 36, InstanceCount: 1,
				Model: [16]float32{0.2, 0, 0, 0, 0, 0.2, 0, 0, 0, 0, 0.2, 0, float32(i)*0.4 - 0.6, 0, 0.5, 1}}
			must(t, ctx.Draw(&d))
		}
		sorted, err := rr.MergeSort(main, []*render.RenderContext{ctx}, reg)
		must(t, err)
		frame := func() error {
			present.PollEvents()
			var err error
			done := make(chan struct{})
			go func() { defer close(done); _, err = rr.Record(main, sorted, g) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d in flight: Record did not return within 10 s", n)
			}
			return err
		}
		for range 6 {
			must(t, frame())
		}
		surf.min.Store(true)
		for i := range 5 {
			if err := frame(); !errors.Is(err, gfx.ErrFrameSkipped) {
				t.Errorf("%d in flight: minimised frame %d: %v, want ErrFrameSkipped", n, i, err)
			}
		}
		surf.min.Store(false)
		for range 6 {
			must(t, frame())
		}
		st := g.Stats()
		if st.Frames != 12 || st.Skipped != 5 || st.Draws != 48 || st.Discarded != 0 {
			t.Errorf("%d in flight: stats %+v, want 12 frames of 4 draws, 5 skipped", n, st)
		}
		if w, h := g.Size(); w != 96 || h != 64 {
			t.Errorf("%d in flight: size %dx%d after the restore", n, w, h)
		}
		must(t, g.Wait())
		must(t, g.Close())
		must(t, g.Close())
	}
}

// TestWindowTinyResize: a window resized to 1×1 and back keeps drawing.
func TestWindowTinyResize(t *testing.T) {
	win := openWindow(t, 64, 64)
	defer win.Close()
	dev := windowDevice(t, win)
	g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Surface: win})
	must(t, err)
	defer func() { must(t, g.Close()) }()
	frame := func() error {
		present.PollEvents()
		if err := g.BeginFrame(render.FrameInfo{Ranges: 0, Threads: 1}); err != nil {
			return err
		}
		return g.EndFrame(nil)
	}
	for _, sz := range [][2]int{{1, 1}, {64, 64}} {
		win.SetSize(sz[0], sz[1])
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if err := frame(); err != nil && !errors.Is(err, gfx.ErrFrameSkipped) {
				t.Fatalf("frame at %v: %v", sz, err)
			}
			if w, h := g.Size(); w == sz[0] && h == sz[1] {
				break
			}
		}
		if w, h := g.Size(); w != sz[0] || h != sz[1] {
			t.Errorf("target %dx%d, want %v", w, h, sz)
		}
	}
}

// TestWindowCloseNil: the package's example defers win.Close() after an
// Open that may have failed with ErrNoDisplay; Close on a nil *Window
// must do nothing.
func TestWindowCloseNil(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("(*Window)(nil).Close panicked: %v", r)
		}
	}()
	var w *present.Window
	w.Close()
}

// TestWindowMethodsAfterClose: a closed window's methods neither crash
// nor touch the freed GLFW window (another window is still open, so GLFW
// stays initialised): ShouldClose reports true, SetTitle and SetSize do
// nothing, CreateSurface fails.
func TestWindowMethodsAfterClose(t *testing.T) {
	keep := openWindow(t, 32, 32)
	defer keep.Close()
	win := openWindow(t, 32, 32)
	win.Close()
	win.Close() // twice: nothing
	win.SetTitle("closed")
	win.SetSize(48, 48)
	if !win.ShouldClose() {
		t.Error("ShouldClose of a closed window: false")
	}
	if _, err := win.CreateSurface(nil); err == nil {
		t.Error("CreateSurface of a closed window succeeded")
	}
	present.PollEvents()
}

// TestEventsWithoutWindow: PollEvents and WaitEvents with no window open
// (GLFW not initialised: before the first Open, after the last Close)
// return without effect.
func TestEventsWithoutWindow(t *testing.T) {
	win := openWindow(t, 32, 32)
	win.Close()
	present.PollEvents()
	present.WaitEvents(time.Millisecond)
	if !win.ShouldClose() {
		t.Error("ShouldClose of a closed window: false")
	}
	if exts := win.InstanceExtensions(); exts != nil {
		t.Errorf("InstanceExtensions of a closed window: %v", exts)
	}
}

// TestWindowFrameAllocs: a window frame (acquire, submit, present) and a
// minimised frame (ErrFrameSkipped) allocate nothing in steady state.
func TestWindowFrameAllocs(t *testing.T) {
	win := openWindow(t, 64, 64)
	defer win.Close()
	dev := windowDevice(t, win)
	surf := &minimisable{w: win}
	g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Surface: surf})
	must(t, err)
	defer func() { must(t, g.Close()) }()
	frame := func() error {
		if err := g.BeginFrame(render.FrameInfo{Ranges: 0, Threads: 2}); err != nil {
			return err
		}
		return g.EndFrame(nil)
	}
	for range 8 {
		must(t, frame())
	}
	if a := testing.AllocsPerRun(50, func() {
		if err := frame(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("window frame: %v allocations, want 0", a)
	}
	surf.min.Store(true)
	if a := testing.AllocsPerRun(50, func() {
		if err := frame(); !errors.Is(err, gfx.ErrFrameSkipped) {
			t.Fatalf("minimised frame: %v", err)
		}
	}); a != 0 {
		t.Errorf("minimised frame: %v allocations, want 0", a)
	}
}

// TestWindowSurfaceLost: a window destroyed under a live Graphics (the
// surface is lost, against the documented order) fails every later frame
// with an error naming VK_ERROR_SURFACE_LOST_KHR rather than crashing or
// hanging, and the Graphics still closes cleanly.
func TestWindowSurfaceLost(t *testing.T) {
	win := openWindow(t, 64, 64)
	dev := windowDevice(t, win)
	g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Surface: win, FramesInFlight: 3})
	must(t, err)
	frame := func() error {
		if err := g.BeginFrame(render.FrameInfo{Ranges: 0, Threads: 1}); err != nil {
			return err
		}
		return g.EndFrame(nil)
	}
	for range 4 {
		must(t, frame())
	}
	win.Close()
	for i := range 3 {
		if err := frame(); err == nil || !strings.Contains(err.Error(), "VK_ERROR_SURFACE_LOST_KHR") {
			t.Errorf("frame %d after the window closed: %v, want VK_ERROR_SURFACE_LOST_KHR", i, err)
		}
	}
	must(t, g.Close())
}
