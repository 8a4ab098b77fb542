package gfx

import (
	"fmt"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/internal/devhook"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

// Graphics goes through its own C function table (vk.Gfx, the C file
// gfx_shim.c of package gpu/internal/vkshim, the one package that reaches
// Vulkan): render passes, pipelines, framebuffers, images, swapchains,
// submits and presents take arrays of structs, and the per-draw calls must
// not allocate. Every struct is built on the C stack; Go passes handles
// and pointers into long-lived Go arrays that hold no Go pointers.

// gfxTable is one Graphics' function table (C memory).
type gfxTable = vk.Gfx

// newGfxTable loads the table through the process's one
// vkGetInstanceProcAddr (package vkshim's loader, loaded by package gpu)
// and the device's vkGetDeviceProcAddr.
func newGfxTable(h devhook.Handles, swapchain bool) (gfxTable, error) {
	t, missing, ok := vk.NewGfx(h.Instance, h.Physical, h.Device, swapchain)
	if !ok {
		if missing == "" {
			return gfxTable{}, fmt.Errorf("gpu: calloc of the graphics function table failed: %w", gpu.ErrOutOfMemory)
		}
		return gfxTable{}, fmt.Errorf("gpu: graphics: %s is not available", missing)
	}
	return t, nil
}
