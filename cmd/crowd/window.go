package main

import (
	"errors"

	"github.com/vkjobs/vkjobs/gpu"
)

// window is the demo's window (GLFW through package gpu/present).
type window struct{}

func openWindow(w, h int, title string) (*window, error) {
	return nil, errors.New("window support is not built yet")
}

func (w *window) surface() gpu.Surface                    { return nil }
func (w *window) extensions() (instance, device []string) { return nil, nil }
func (w *window) poll()                                   {}
func (w *window) shouldClose() bool                       { return true }
func (w *window) setTitle(string)                         {}
func (w *window) size() (int, int)                        { return 0, 0 }
func (w *window) close()                                  {}
