package gfx

import (
	"fmt"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/internal/devhook"
	"github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

// Graphics goes through its own C function table (vkshim.Gfx, the C file
// gfx_shim.c of package gpu/internal/vkshim) for the reasons of package
// gpu's shim: render passes, pipelines, framebuffers, submits and presents
// take arrays of structs that vulkan-go would copy into C memory freed by
// finalizers while Vulkan may still read them, and the per-draw calls must
// not allocate. Every struct is built on the C stack; Go passes handles
// and pointers into long-lived Go arrays that hold no Go pointers.

// gfxTable is one Graphics' function table (C memory).
type gfxTable = vkshim.Gfx

// newGfxTable loads the table through the process's one
// vkGetInstanceProcAddr (vkshim.GIPA, loaded by package gpu).
func newGfxTable(h devhook.Handles, swapchain bool) (gfxTable, error) {
	t, missing, ok := vkshim.NewGfx(h.Instance, h.Physical, h.Device, swapchain)
	if !ok {
		if missing == "" {
			return gfxTable{}, fmt.Errorf("gpu: calloc of the graphics function table failed: %w", gpu.ErrOutOfMemory)
		}
		return gfxTable{}, fmt.Errorf("gpu: graphics: %s is not available", missing)
	}
	return t, nil
}

// bufferU64 is a VkBuffer as the C layer's uint64_t handle.
var bufferU64 = vkshim.BufferU64
