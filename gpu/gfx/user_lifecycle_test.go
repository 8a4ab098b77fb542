package gfx_test

// A Graphics used after its Device (or itself) was closed: every call
// returns an error wrapping gpu.ErrClosed that says which Close came
// first. Wait, ReadPixels and BeginFrame after gpu.Device.Close went
// through freed Vulkan handles and crashed the process (SIGSEGV in
// vkWaitForFences).

import (
	"errors"
	"image"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gfx"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/render"
)

func TestGraphicsAfterClose(t *testing.T) {
	for _, deviceFirst := range []bool{true, false} {
		dev, log := gputest.Open(t, gpu.Options{})
		g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Width: 64, Height: 64})
		if err != nil {
			t.Fatal(err)
		}
		want := "after Graphics.Close"
		if deviceFirst {
			want = "after gpu.Device.Close"
			if err := dev.Close(); err != nil {
				t.Fatal(err)
			}
		} else if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		_, imgErr := g.Image()
		_, pipeErr := g.AddPipeline(render.NewRegistry(), gfx.Pipeline{Name: "p"})
		_, meshErr := g.NewMesh(render.NewRegistry(), "m", []gfx.Vertex{{}}, nil, nil)
		for what, err := range map[string]error{
			"Wait":        g.Wait(),
			"BeginFrame":  g.BeginFrame(render.FrameInfo{}),
			"ReadPixels":  g.ReadPixels(image.NewRGBA(image.Rect(0, 0, 64, 64))),
			"Image":       imgErr,
			"AddPipeline": pipeErr,
			"NewMesh":     meshErr,
		} {
			if !errors.Is(err, gpu.ErrClosed) || !strings.Contains(err.Error(), want) {
				t.Errorf("deviceFirst=%v: %s: %v, want gpu.ErrClosed saying %q", deviceFirst, what, err, want)
			}
		}
		if deviceFirst {
			// The device's Close closed the Graphics (nothing leaked:
			// gputest fails on the validation layer's leak reports).
			if err := g.Close(); err != nil {
				t.Errorf("Graphics.Close after the device's: %v, want nil", err)
			}
		} else if err := dev.Close(); err != nil {
			t.Fatal(err)
		}
		// Either order frees everything: the validation layer reports
		// any object left at vkDestroyDevice ("has not been destroyed").
		log.Check(t, 0)
	}
}

// TestGraphicsOptionsRefused: negative or absurd options are errors naming
// the field (negative ones were replaced by the defaults without a word).
func TestGraphicsOptionsRefused(t *testing.T) {
	dev, _ := gputest.Open(t, gpu.Options{})
	defer dev.Close()
	for field, o := range map[string]gfx.GraphicsOptions{
		"FramesInFlight -1":      {Width: 16, Height: 16, FramesInFlight: -1},
		"FramesInFlight 1000000": {Width: 16, Height: 16, FramesInFlight: 1000000},
		"FenceTimeout -1s":       {Width: 16, Height: 16, FenceTimeout: -time.Second},
	} {
		g, err := gfx.NewGraphics(dev, o)
		if err == nil {
			g.Close()
			t.Errorf("%s accepted", field)
		} else if !strings.Contains(err.Error(), "GraphicsOptions."+field) {
			t.Errorf("%s: %v does not name the field and value", field, err)
		}
	}
}
