package main

import (
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gfx"
	"github.com/vkjobs/vkjobs/gpu/present"
)

// window is the demo's window: a resizable GLFW window (package
// gpu/present) drawn through a swapchain; Esc closes it, as its close
// button does. Its methods must be called on
// the main thread: the frame loop's goroutine, locked to it by init.
type window struct {
	w *present.Window
}

func openWindow(width, height int, title string) (*window, error) {
	pw, err := present.Open(present.Config{Width: width, Height: height, Title: title, CloseOnEscape: true})
	if err != nil {
		return nil, err
	}
	return &window{w: pw}, nil
}

func (w *window) surface() gfx.Surface { return w.w }

// extensions returns the Vulkan instance and device extensions the window
// needs (surface, platform surface, swapchain).
func (w *window) extensions() (instance, device []string) {
	o := w.w.DeviceOptions(gpu.Options{})
	return o.InstanceExtensions, o.DeviceExtensions
}

func (w *window) poll()             { present.PollEvents() }
func (w *window) idle()             { present.WaitEvents(50 * time.Millisecond) }
func (w *window) shouldClose() bool { return w.w.ShouldClose() }
func (w *window) setTitle(s string) { w.w.SetTitle(s) }
func (w *window) size() (int, int)  { return w.w.FramebufferSize() }
func (w *window) close()            { w.w.Close() }
