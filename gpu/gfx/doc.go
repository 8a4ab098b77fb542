// Package gfx is the project's Vulkan graphics backend: it implements
// render.Recorder (render pass, graphics pipelines, secondary command
// buffers recorded in parallel, one per range, executed in order by one
// primary), offscreen targets read back after every frame (ReadPixels,
// Image, WritePNG), and the swapchain side of presentation: a window
// system hands it a surface through the Surface hook (package gpu/present
// does so with GLFW), so this package links no window system. Its design
// is documented in gfx_doc.go.
//
// # Where it sits
//
// Package gpu is the compute backend (device, memory, executor); package
// gfx draws on a *gpu.Device and reads GPU buffers (*gpu.Buffer) as vertex,
// index and instance buffers, so the skinning kernel's output is drawn
// without a round trip through Go. Only gfx (and what uses it: gpu/present,
// cmd/crowd) imports render: a compute user of gpu links neither the
// renderer nor this package (gpu's TestComputeLinksNoRenderer checks it
// with go list -deps).
//
// What gfx needs of a Device beyond gpu's public API (Vulkan handles, the
// queue's lock, host-visible staging memory, buffer reference counts,
// device loss, fault injection) it reaches through the internal package
// gpu/internal/devhook, which package gpu fills in its init; nothing of it
// is public API. Every Vulkan function gfx calls through C is loaded into
// its own table (gfx_shim.c in gpu/internal/vkshim, the one package that
// uses cgo) through package gpu's vkGetInstanceProcAddr and the device's
// vkGetDeviceProcAddr, so the process has one Vulkan loader and one
// binding; gfx takes its handle types and constants from vkshim too. Failed calls become *gpu.VkError naming
// the call and its VkResult, as in package gpu; the errors this package
// defines keep the "gpu:" prefix they had when graphics lived in gpu.
//
// Rejected alternatives: graphics inside package gpu (every compute user,
// kbench included, linked the renderer), and exported accessors on
// gpu.Device for handles and locks (public API for one in-module user).
package gfx
