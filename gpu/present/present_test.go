package present_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gfx"
	"github.com/vkjobs/vkjobs/gpu/present"
	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

// xvfbDisplay is the display the tests started, or "".
var xvfbDisplay string

// TestMain starts Xvfb when DISPLAY is unset and Xvfb is installed (and
// kills it at the end), then runs the tests through present.Main so that
// their GLFW calls run on the main thread.
func TestMain(m *testing.M) {
	stop, err := startXvfb()
	if err != nil {
		fmt.Fprintln(os.Stderr, "present: starting Xvfb:", err)
	}
	code := 0
	present.Main(func() { code = m.Run() })
	stop()
	os.Exit(code)
}

// startXvfb starts `Xvfb :N -screen 0 1024x768x24` on a free display
// number when DISPLAY is unset, and waits for its socket.
func startXvfb() (stop func(), err error) {
	stop = func() {}
	if os.Getenv("DISPLAY") != "" {
		return stop, nil
	}
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		return stop, fmt.Errorf("Xvfb not installed (Debian: xvfb): %w", err)
	}
	for n := 99; n < 140; n++ {
		sock := fmt.Sprintf("/tmp/.X11-unix/X%d", n)
		lock := fmt.Sprintf("/tmp/.X%d-lock", n)
		if exists(sock) || exists(lock) {
			continue
		}
		cmd := exec.Command(bin, fmt.Sprintf(":%d", n), "-screen", "0", "1024x768x24", "-nolisten", "tcp")
		if err := cmd.Start(); err != nil {
			return stop, err
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		kill := func() {
			// SIGTERM lets Xvfb remove its socket and lock file.
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(3 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			select {
			case <-exited:
				deadline = time.Time{} // it died (display taken?): try the next number
			default:
			}
			if deadline.IsZero() {
				break
			}
			if exists(sock) {
				os.Setenv("DISPLAY", fmt.Sprintf(":%d", n))
				xvfbDisplay = fmt.Sprintf(":%d", n)
				return kill, nil
			}
		}
		kill()
	}
	return stop, errors.New("no free display number in :99..:139")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// needDisplay skips (fails with CI=true) when no display is available.
func needDisplay(t *testing.T) {
	t.Helper()
	if os.Getenv("DISPLAY") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no DISPLAY and no Xvfb (Debian: xvfb); CI must run the window tests")
		}
		t.Skip("skipping: no DISPLAY and Xvfb could not be started")
	}
}

func TestOpenWithoutDisplay(t *testing.T) {
	for _, disp := range []string{"", ":4242"} {
		t.Setenv("DISPLAY", disp)
		w, err := present.Open(present.Config{Width: 64, Height: 64})
		if !errors.Is(err, present.ErrNoDisplay) {
			if w != nil {
				w.Close()
			}
			t.Errorf("DISPLAY=%q: Open error %v, want ErrNoDisplay", disp, err)
		}
	}
}

// msgLog collects debug-report messages.
type msgLog struct {
	mu   sync.Mutex
	msgs []gpu.Message
}

func (l *msgLog) add(m gpu.Message) {
	l.mu.Lock()
	l.msgs = append(l.msgs, m)
	l.mu.Unlock()
}

// TestWindowPresentsAndResizes opens a window (under Xvfb), draws frames
// into its swapchain through render.Renderer and gfx.Graphics, with vsync
// off (MAILBOX or IMMEDIATE) and on (FIFO), resizes it mid-way (the
// framebuffer-size callback reaches gpu, which recreates the swapchain),
// and checks that the validation layer reported nothing, leaks included.
func TestWindowPresentsAndResizes(t *testing.T) {
	needDisplay(t)
	win, err := present.Open(present.Config{Width: 320, Height: 240, Title: "vkjobs test"})
	if errors.Is(err, present.ErrNoDisplay) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer win.Close()
	if fw, fh := win.FramebufferSize(); fw != 320 || fh != 240 {
		t.Fatalf("framebuffer %dx%d, want 320x240", fw, fh)
	}
	log := &msgLog{}
	dev, err := gpu.Open(win.DeviceOptions(gpu.Options{Validation: true, OnMessage: log.add}))
	if errors.Is(err, gpu.ErrNoDevice) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: no Vulkan device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
		for _, m := range log.msgs {
			t.Errorf("validation: %v", m)
		}
	}()
	s, err := sched.New(sched.Config{Workers: 2})
	must(t, err)
	defer s.Close()
	main, err := s.RegisterThread("main")
	must(t, err)
	rr, err := render.New(s, render.Config{Ranges: 4, MinRange: 1})
	must(t, err)

	size := [2]int{320, 240}
	for _, vsync := range []bool{false, true} {
		g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Surface: win, VSync: vsync})
		must(t, err)
		mode := g.PresentMode()
		if vsync && mode != "FIFO" || !vsync && mode != "MAILBOX" && mode != "IMMEDIATE" && mode != "FIFO" {
			t.Errorf("vsync %v: present mode %s", vsync, mode)
		}
		t.Logf("vsync %v: present mode %s", vsync, mode)
		reg := render.NewRegistry()
		pipe, err := g.AddPipeline(reg, gfx.Pipeline{Name: "lit"})
		must(t, err)
		verts, idx := cube()
		box, err := g.NewMesh(reg, "box", verts, idx, nil)
		must(t, err)
		ctx, err := render.NewContext(64 * render.DrawRecordSize)
		must(t, err)
		for i := range 8 {
			x := float32(i%4)*0.5 - 0.75
			y := float32(i/4)*0.8 - 0.4
			d := render.DrawPacket{Pipeline: pipe, Mesh: box, VertexCount: 36, InstanceCount: 1,
				Model: [16]float32{0.15, 0, 0, 0, 0, 0.15, 0, 0, 0, 0, 0.15, 0, x, y, 0.5, 1},
				Color: [4]float32{float32(i) / 8, 0.5, 1 - float32(i)/8, 1}}
			must(t, ctx.Draw(&d))
		}
		sorted, err := rr.MergeSort(main, []*render.RenderContext{ctx}, reg)
		must(t, err)
		frame := func() {
			t.Helper()
			present.PollEvents()
			if _, err := rr.Record(main, sorted, g); err != nil && !errors.Is(err, gfx.ErrFrameSkipped) {
				t.Fatal(err)
			}
		}
		for range 20 {
			frame()
		}
		if w, h := g.Size(); w != size[0] || h != size[1] {
			t.Errorf("vsync %v: target %dx%d, want %dx%d", vsync, w, h, size[0], size[1])
		}
		// A frame's window calls (through Main's loop) allocate nothing.
		if a := testing.AllocsPerRun(100, func() {
			present.PollEvents()
			if win.ShouldClose() {
				t.Error("ShouldClose: true without a close request")
			}
			win.SetTitle("vkjobs test")
		}); a != 0 {
			t.Errorf("PollEvents + ShouldClose + SetTitle: %v allocations per frame, want 0", a)
		}
		// Resize, and draw until the new size arrives through the
		// framebuffer-size callback and the swapchain is recreated.
		size = [2]int{size[0] + 160, size[1] + 90}
		resizes := win.Resizes()
		win.SetSize(size[0], size[1])
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			frame()
			if w, h := g.Size(); w == size[0] && h == size[1] {
				break
			}
		}
		for range 20 {
			frame()
		}
		if w, h := g.Size(); w != size[0] || h != size[1] {
			t.Errorf("vsync %v: after the resize the target is %dx%d, want %dx%d", vsync, w, h, size[0], size[1])
		}
		if win.Resizes() == resizes {
			t.Errorf("vsync %v: no framebuffer-size event after SetSize", vsync)
		}
		// Resize again but draw without polling events: the window
		// system's size is ahead of the callback's, and the swapchain
		// must follow through VK_SUBOPTIMAL_KHR / VK_ERROR_OUT_OF_DATE_KHR.
		rec0 := g.Stats().Recreated
		size = [2]int{size[0] - 100, size[1] - 50}
		win.SetSize(size[0], size[1])
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if _, err := rr.Record(main, sorted, g); err != nil && !errors.Is(err, gfx.ErrFrameSkipped) {
				t.Fatal(err)
			}
			if w, h := g.Size(); w == size[0] && h == size[1] {
				break
			}
		}
		if w, h := g.Size(); w != size[0] || h != size[1] || g.Stats().Recreated == rec0 {
			t.Errorf("vsync %v: resized without polling events: target %dx%d after %d recreations, want %dx%d",
				vsync, w, h, g.Stats().Recreated-rec0, size[0], size[1])
		}
		for range 10 {
			frame()
		}
		if w, h := g.Size(); w != size[0] || h != size[1] {
			t.Errorf("vsync %v: after the second resize the target is %dx%d, want %dx%d", vsync, w, h, size[0], size[1])
		}
		st := g.Stats()
		if st.Recreated < 1 || st.Frames < 40 || st.Discarded != 0 || st.Draws != 8*st.Frames {
			t.Errorf("vsync %v: stats %+v, want >= 1 swapchain recreation, >= 40 frames of 8 draws", vsync, st)
		}
		t.Logf("vsync %v: %+v", vsync, st)
		if !vsync {
			must(t, g.Close())
		}
		// The second Graphics (swapchain, surface, frames in flight) is
		// left open: the deferred Device.Close closes it, and the
		// validation layer would report anything left behind.
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cube returns a unit cube (half-size 1): 24 vertices with flat normals,
// 36 indices, counter-clockwise seen from outside.
func cube() ([]gfx.Vertex, []uint32) {
	faces := [][3][3]float32{ // normal, u, v with u × v = normal
		{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {{-1, 0, 0}, {0, 0, 1}, {0, 1, 0}},
		{{0, 1, 0}, {0, 0, 1}, {1, 0, 0}}, {{0, -1, 0}, {1, 0, 0}, {0, 0, 1}},
		{{0, 0, 1}, {1, 0, 0}, {0, 1, 0}}, {{0, 0, -1}, {0, 1, 0}, {1, 0, 0}},
	}
	var vs []gfx.Vertex
	var ix []uint32
	for _, f := range faces {
		base := uint32(len(vs))
		for _, c := range [4][2]float32{{-1, -1}, {1, -1}, {1, 1}, {-1, 1}} {
			var p [3]float32
			for k := range p {
				p[k] = f[0][k] + c[0]*f[1][k] + c[1]*f[2][k]
			}
			vs = append(vs, gfx.Vertex{Pos: p, Normal: f[0]})
		}
		ix = append(ix, base, base+1, base+2, base, base+2, base+3)
	}
	return vs, ix
}
