package gfx_test

// Closing: gpu.Device.Close closes a Graphics still open (its objects do
// not leak), and a Graphics closed, by itself or by its Device, in the
// middle of a frame answers every later call with an error, never reaching
// the freed frames or the freed Vulkan function table.

import (
	"errors"
	"fmt"
	"image"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/gfx"
	"github.com/vkjobs/vkjobs/gpu/gputest"
	"github.com/vkjobs/vkjobs/render"
)

func dcTriangle() []gfx.Vertex {
	return []gfx.Vertex{{Pos: [3]float32{-0.5, -0.5, 0.5}}, {Pos: [3]float32{0.5, -0.5, 0.5}}, {Pos: [3]float32{0, 0.5, 0.5}}}
}

// dcScene: a Graphics with two pipelines, a NewMesh mesh, an AddMesh
// mesh over user buffers (one of them closed by the user while the mesh
// holds it), and one frame submitted and not waited for.
func dcScene(t *testing.T, dev *gpu.Device) (*gfx.Graphics, render.PipelineID, render.MeshID, *gpu.Buffer) {
	g, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Width: 64, Height: 64, FramesInFlight: 3})
	if err != nil {
		t.Fatal(err)
	}
	reg := render.NewRegistry()
	pipe, err := g.AddPipeline(reg, gfx.Pipeline{Name: "lit", Cull: gfx.CullNone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddPipeline(reg, gfx.Pipeline{Name: "inst", Instanced: true}); err != nil {
		t.Fatal(err)
	}
	mesh, err := g.NewMesh(reg, "tri", dcTriangle(), []uint32{0, 1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := dev.NewBuffer(uint64(3 * gfx.VertexSize))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := dev.NewBuffer(12)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddMesh(reg, gfx.Mesh{Name: "user", Vertices: vb, VertexCount: 3, Indices: ib, IndexCount: 3}); err != nil {
		t.Fatal(err)
	}
	ib.Close() // the mesh keeps it alive
	// One frame in flight.
	dcFrame(t, g, pipe, mesh, true)
	return g, pipe, mesh, vb
}

func dcFrame(t *testing.T, g *gfx.Graphics, pipe render.PipelineID, mesh render.MeshID, end bool) {
	t.Helper()
	if err := g.BeginFrame(render.FrameInfo{Ranges: 1, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	if err := g.Begin(0, render.Range{Index: 0}); err != nil {
		t.Fatal(err)
	}
	g.BindPipeline(0, pipe)
	g.BindMesh(0, mesh)
	g.Draw(0, &render.DrawPacket{Pipeline: pipe, Mesh: mesh, VertexCount: 3, InstanceCount: 1,
		Model: [16]float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, Color: [4]float32{1, 1, 1, 1}})
	if err := g.End(0, render.Range{Index: 0}); err != nil {
		t.Fatal(err)
	}
	if end {
		if err := g.EndFrame(nil); err != nil {
			t.Fatal(err)
		}
	}
}

// catchPanic runs f and returns its panic as an error.
func catchPanic(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	return f()
}

// Device.Close with meshes (owned and user buffers, one user-closed),
// pipelines and a frame in flight; then every Graphics method; then
// Graphics.Close; then the user's buffer Close. Validation must stay silent.
func TestDeviceCloseWithGraphicsOpen(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	g, pipe, mesh, vb := dcScene(t, dev)
	if err := dev.Close(); err != nil {
		t.Fatalf("Device.Close: %v", err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for what, f := range map[string]func() error{
		"Wait":       g.Wait,
		"ReadPixels": func() error { return g.ReadPixels(img) },
		"BeginFrame": func() error { return g.BeginFrame(render.FrameInfo{Ranges: 1, Threads: 1}) },
		"AddMesh": func() error {
			_, err := g.AddMesh(nil, gfx.Mesh{Name: "x", Vertices: vb, VertexCount: 3})
			return err
		},
		"NewMesh": func() error { _, err := g.NewMesh(nil, "y", dcTriangle(), nil, nil); return err },
	} {
		err := catchPanic(f)
		t.Logf("%s after Device.Close: %v", what, err)
		if !errors.Is(err, gpu.ErrClosed) {
			t.Errorf("%s after Device.Close: %v, want ErrClosed", what, err)
		}
	}
	_ = pipe
	_ = mesh
	if err := g.Close(); err != nil {
		t.Errorf("Graphics.Close after Device.Close: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Graphics.Close: %v", err)
	}
	if err := vb.Close(); err != nil {
		t.Errorf("Buffer.Close after Device.Close: %v", err)
	}
	log.Check(t, 0)
}

// A frame being recorded (BeginFrame, a range begun and/or ended) when the
// Device closes; then the recorder calls render.Record would make next.
func TestCloseMidFrame(t *testing.T) {
	for _, shape := range []string{"rangeEnded", "rangeOpen", "graphicsCloseMidFrame"} {
		t.Run(shape, func(t *testing.T) {
			dev, log := gputest.Open(t, gpu.Options{})
			g, pipe, mesh, _ := dcScene(t, dev)
			switch shape {
			case "rangeEnded":
				dcFrame(t, g, pipe, mesh, false)
			case "rangeOpen", "graphicsCloseMidFrame":
				if err := g.BeginFrame(render.FrameInfo{Ranges: 1, Threads: 1}); err != nil {
					t.Fatal(err)
				}
				if err := g.Begin(0, render.Range{Index: 0}); err != nil {
					t.Fatal(err)
				}
			}
			if shape == "graphicsCloseMidFrame" {
				if err := g.Close(); err != nil {
					t.Errorf("Graphics.Close: %v", err)
				}
			} else if err := dev.Close(); err != nil {
				t.Errorf("Device.Close: %v", err)
			}
			if shape == "rangeOpen" || shape == "graphicsCloseMidFrame" {
				err := catchPanic(func() error {
					g.BindPipeline(0, pipe)
					g.Draw(0, &render.DrawPacket{Pipeline: pipe, Mesh: mesh, VertexCount: 3, InstanceCount: 1})
					return g.End(0, render.Range{Index: 0})
				})
				t.Logf("BindPipeline/Draw/End after close: %v", err)
				if !errors.Is(err, gpu.ErrClosed) {
					t.Errorf("range calls after close: %v, want ErrClosed", err)
				}
			}
			err := catchPanic(func() error { return g.EndFrame(nil) })
			t.Logf("EndFrame after close: %v", err)
			if !errors.Is(err, gpu.ErrClosed) {
				t.Errorf("EndFrame after close: %v, want ErrClosed", err)
			}
			err = catchPanic(func() error { return g.BeginFrame(render.FrameInfo{Ranges: 1, Threads: 1}) })
			t.Logf("BeginFrame after close: %v", err)
			if !errors.Is(err, gpu.ErrClosed) {
				t.Errorf("BeginFrame after close: %v, want ErrClosed", err)
			}
			if shape == "graphicsCloseMidFrame" {
				dev.Close()
			}
			log.Check(t, 0)
		})
	}
}

// Graphics made on a closed device, and a Graphics whose Close and the
// Device's both run (Graphics first, then device; device, then Graphics
// twice) with two Graphics on one device.
func TestDeviceCloseTwoGraphics(t *testing.T) {
	dev, log := gputest.Open(t, gpu.Options{})
	g1, _, _, _ := dcScene(t, dev)
	g2, _, _, _ := dcScene(t, dev)
	if err := g1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g1.Close(); err != nil {
		t.Error(err)
	}
	if err := g2.Close(); err != nil {
		t.Error(err)
	}
	if _, err := gfx.NewGraphics(dev, gfx.GraphicsOptions{Width: 8, Height: 8}); !errors.Is(err, gpu.ErrClosed) {
		t.Errorf("NewGraphics on a closed device: %v", err)
	}
	log.Check(t, 0)
}

// TestGraphicsAfterClose: a Graphics used after its Device (or itself) was
// closed answers every call, Wait, ReadPixels and BeginFrame included, with
// an error wrapping gpu.ErrClosed that says which Close came first; none
// touches the freed Vulkan handles.
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
