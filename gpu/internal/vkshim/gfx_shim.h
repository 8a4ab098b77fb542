// gfx_shim.h: the graphics table of package vkshim, used by package
// gpu/gfx (see gfx.go).
//
// Same rules as shim.h: plain values, handles as uint64_t (dispatchable
// ones as their C pointer type), pointers only to arrays the caller owns;
// every create-info struct and every array Vulkan reads is built on the C
// stack, so nothing here allocates and no finalizer can free what Vulkan
// still reads.
#ifndef VKJ_GFX_SHIM_H
#define VKJ_GFX_SHIM_H 1

#include <stdint.h>
#include <stddef.h>
#define VK_NO_PROTOTYPES 1
#include <vulkan/vulkan.h>

// Function table of one Graphics: device functions through
// vkGetDeviceProcAddr, instance functions through vkGetInstanceProcAddr.
typedef struct vkj_gfx {
	VkInstance inst;
	VkPhysicalDevice phys;
	VkDevice dev;

	// Instance level.
	PFN_vkGetPhysicalDeviceFormatProperties GetPhysicalDeviceFormatProperties;
	PFN_vkDestroySurfaceKHR DestroySurfaceKHR;
	PFN_vkGetPhysicalDeviceSurfaceSupportKHR GetPhysicalDeviceSurfaceSupportKHR;
	PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR GetPhysicalDeviceSurfaceCapabilitiesKHR;
	PFN_vkGetPhysicalDeviceSurfaceFormatsKHR GetPhysicalDeviceSurfaceFormatsKHR;
	PFN_vkGetPhysicalDeviceSurfacePresentModesKHR GetPhysicalDeviceSurfacePresentModesKHR;

	// Device level: objects.
	PFN_vkCreateRenderPass CreateRenderPass;
	PFN_vkDestroyRenderPass DestroyRenderPass;
	PFN_vkCreateFramebuffer CreateFramebuffer;
	PFN_vkDestroyFramebuffer DestroyFramebuffer;
	PFN_vkCreateImage CreateImage;
	PFN_vkDestroyImage DestroyImage;
	PFN_vkGetImageMemoryRequirements GetImageMemoryRequirements;
	PFN_vkAllocateMemory AllocateMemory;
	PFN_vkFreeMemory FreeMemory;
	PFN_vkBindImageMemory BindImageMemory;
	PFN_vkCreateImageView CreateImageView;
	PFN_vkDestroyImageView DestroyImageView;
	PFN_vkCreateShaderModule CreateShaderModule;
	PFN_vkDestroyShaderModule DestroyShaderModule;
	PFN_vkCreateDescriptorSetLayout CreateDescriptorSetLayout;
	PFN_vkDestroyDescriptorSetLayout DestroyDescriptorSetLayout;
	PFN_vkCreateDescriptorPool CreateDescriptorPool;
	PFN_vkDestroyDescriptorPool DestroyDescriptorPool;
	PFN_vkAllocateDescriptorSets AllocateDescriptorSets;
	PFN_vkUpdateDescriptorSets UpdateDescriptorSets;
	PFN_vkCreatePipelineLayout CreatePipelineLayout;
	PFN_vkDestroyPipelineLayout DestroyPipelineLayout;
	PFN_vkCreateGraphicsPipelines CreateGraphicsPipelines;
	PFN_vkDestroyPipeline DestroyPipeline;
	PFN_vkCreateCommandPool CreateCommandPool;
	PFN_vkDestroyCommandPool DestroyCommandPool;
	PFN_vkResetCommandPool ResetCommandPool;
	PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
	PFN_vkCreateFence CreateFence;
	PFN_vkDestroyFence DestroyFence;
	PFN_vkResetFences ResetFences;
	PFN_vkWaitForFences WaitForFences;
	PFN_vkCreateSemaphore CreateSemaphore;
	PFN_vkDestroySemaphore DestroySemaphore;

	// Device level: commands and queue.
	PFN_vkBeginCommandBuffer BeginCommandBuffer;
	PFN_vkEndCommandBuffer EndCommandBuffer;
	PFN_vkCmdBeginRenderPass CmdBeginRenderPass;
	PFN_vkCmdEndRenderPass CmdEndRenderPass;
	PFN_vkCmdExecuteCommands CmdExecuteCommands;
	PFN_vkCmdBindPipeline CmdBindPipeline;
	PFN_vkCmdBindDescriptorSets CmdBindDescriptorSets;
	PFN_vkCmdBindVertexBuffers CmdBindVertexBuffers;
	PFN_vkCmdBindIndexBuffer CmdBindIndexBuffer;
	PFN_vkCmdPushConstants CmdPushConstants;
	PFN_vkCmdDraw CmdDraw;
	PFN_vkCmdDrawIndexed CmdDrawIndexed;
	PFN_vkCmdSetViewport CmdSetViewport;
	PFN_vkCmdSetScissor CmdSetScissor;
	PFN_vkCmdClearAttachments CmdClearAttachments;
	PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
	PFN_vkCmdCopyImageToBuffer CmdCopyImageToBuffer;
	PFN_vkQueueSubmit QueueSubmit;
	PFN_vkQueueWaitIdle QueueWaitIdle;

	// VK_KHR_swapchain (NULL unless the device enabled it).
	PFN_vkCreateSwapchainKHR CreateSwapchainKHR;
	PFN_vkDestroySwapchainKHR DestroySwapchainKHR;
	PFN_vkGetSwapchainImagesKHR GetSwapchainImagesKHR;
	PFN_vkAcquireNextImageKHR AcquireNextImageKHR;
	PFN_vkQueuePresentKHR QueuePresentKHR;
} vkj_gfx;

vkj_gfx *vkj_gfx_new(void);
void vkj_gfx_free(vkj_gfx *g);
// vkj_gfx_init fills g through vkj_gipa() (shim.h: the one loader of the
// process); it returns NULL or the name of a missing function. Swapchain
// functions are loaded only when swapchain != 0.
const char *vkj_gfx_init(vkj_gfx *g, VkInstance inst, VkPhysicalDevice pd, VkDevice dev, int swapchain);

// Object kinds for vkj_gfx_destroy.
enum {
	VKJ_RENDER_PASS = 1,
	VKJ_FRAMEBUFFER,
	VKJ_IMAGE,
	VKJ_MEMORY,
	VKJ_IMAGE_VIEW,
	VKJ_SHADER_MODULE,
	VKJ_SET_LAYOUT,
	VKJ_DESC_POOL,
	VKJ_PIPE_LAYOUT,
	VKJ_PIPELINE,
	VKJ_COMMAND_POOL,
	VKJ_FENCE,
	VKJ_SEMAPHORE,
	VKJ_SWAPCHAIN,
	VKJ_SURFACE,
};
void vkj_gfx_destroy(const vkj_gfx *g, int kind, uint64_t h);

uint32_t vkj_format_features(const vkj_gfx *g, uint32_t format); // optimalTilingFeatures

// Render pass: one subpass with colour attachment 0 and depth attachment 1,
// both cleared at the start; the colour attachment ends in final_layout.
VkResult vkj_render_pass(const vkj_gfx *g, uint32_t color_format, uint32_t depth_format, uint32_t final_layout, uint64_t *out);
VkResult vkj_framebuffer(const vkj_gfx *g, uint64_t rp, uint64_t color_view, uint64_t depth_view, uint32_t w, uint32_t h, uint64_t *out);

// A 2D image with optimal tiling; its memory requirements are returned.
VkResult vkj_image(const vkj_gfx *g, uint32_t format, uint32_t w, uint32_t h, uint32_t usage,
	uint64_t *image, uint64_t *size, uint32_t *type_bits);
VkResult vkj_image_bind(const vkj_gfx *g, uint64_t image, uint64_t size, uint32_t mem_type, uint64_t *mem);
VkResult vkj_image_view(const vkj_gfx *g, uint64_t image, uint32_t format, uint32_t aspect, uint64_t *out);

VkResult vkj_shader_module(const vkj_gfx *g, const uint32_t *code, size_t size, uint64_t *out);
// The layouts every graphics pipeline shares: set 0 = one uniform buffer
// at binding 0 (vertex and fragment stages), push constants of pc_size
// bytes (vertex and fragment), and a descriptor pool for `sets` sets.
VkResult vkj_frame_layouts(const vkj_gfx *g, uint32_t pc_size, uint32_t sets,
	uint64_t *set_layout, uint64_t *pipe_layout, uint64_t *pool);
VkResult vkj_frame_set(const vkj_gfx *g, uint64_t pool, uint64_t set_layout, uint64_t buffer, uint64_t range, uint64_t *out);

typedef struct vkj_pipe_desc {
	uint64_t vert, frag, layout, render_pass;
	uint32_t instanced;   // binding 1: per-instance vec4 offset/scale + vec4 colour
	uint32_t cull;        // VkCullModeFlags
	uint32_t blend;       // alpha blending, no depth writes
	uint32_t depth_test;
} vkj_pipe_desc;
VkResult vkj_graphics_pipeline(const vkj_gfx *g, uint64_t cache, const vkj_pipe_desc *d, uint64_t *out);

VkResult vkj_fence(const vkj_gfx *g, int signaled, uint64_t *out);
VkResult vkj_semaphore(const vkj_gfx *g, uint64_t *out);
VkResult vkj_command_pool(const vkj_gfx *g, uint32_t qfam, uint64_t *out);
VkResult vkj_alloc_cbs(const vkj_gfx *g, uint64_t pool, int secondary, uint32_t n, VkCommandBuffer *out);

// Frame start: waits for fence (when wait != 0), then resets the n pools.
VkResult vkj_frame_begin(const vkj_gfx *g, uint64_t fence, int wait, uint64_t timeout_ns, const uint64_t *pools, uint32_t n);
VkResult vkj_wait_fence(const vkj_gfx *g, uint64_t fence, uint64_t timeout_ns);
VkResult vkj_reset_pool(const vkj_gfx *g, uint64_t pool);

// Secondary command buffer of a range: begin with render-pass inheritance,
// bind the frame's descriptor set, and set a full-target viewport and
// scissor.
VkResult vkj_secondary_begin(const vkj_gfx *g, VkCommandBuffer cb, uint64_t rp, uint64_t fb,
	uint32_t w, uint32_t h, uint64_t layout, uint64_t set);
VkResult vkj_cb_end(const vkj_gfx *g, VkCommandBuffer cb);
void vkj_bind_pipeline(const vkj_gfx *g, VkCommandBuffer cb, uint64_t pipe);
// index_type: 0 none, 1 uint16, 2 uint32. inst == 0: no instance buffer.
void vkj_bind_mesh(const vkj_gfx *g, VkCommandBuffer cb, uint64_t vbuf, uint64_t voff,
	uint64_t ibuf, uint64_t ioff, uint32_t index_type, uint64_t inst, uint64_t inst_off);
// kind 0: viewport (depth 0..1), 1: scissor.
void vkj_state(const vkj_gfx *g, VkCommandBuffer cb, uint32_t kind, float x, float y, float w, float h);
void vkj_draw(const vkj_gfx *g, VkCommandBuffer cb, uint64_t layout, const uint8_t *pc, uint32_t pc_size,
	int indexed, uint32_t count, uint32_t instances, uint32_t first, uint32_t first_instance);
// flags: 1 colour, 2 depth.
void vkj_clear(const vkj_gfx *g, VkCommandBuffer cb, uint32_t flags, const float *rgba, float depth, uint32_t w, uint32_t h);

// vkj_frame_record records a frame's primary command buffer: a barrier
// that makes compute, transfer and host writes visible to vertex input and
// shaders; the render pass (clear), executing the secondaries in order; an
// optional copy of the colour image into a buffer for the host; a barrier
// ordering later compute and transfer work after this frame's reads.
VkResult vkj_frame_record(const vkj_gfx *g, VkCommandBuffer cb, uint64_t rp, uint64_t fb, uint32_t w, uint32_t h,
	const float *clear, const VkCommandBuffer *secs, uint32_t nsec, uint64_t copy_image, uint64_t copy_buf);
// vkj_frame_submit resets fence and submits cb; it waits for wait_sem (if
// not 0) at the colour-output stage and signals signal_sem (if not 0).
VkResult vkj_frame_submit(const vkj_gfx *g, VkQueue q, VkCommandBuffer cb, uint64_t wait_sem, uint64_t signal_sem, uint64_t fence);

// Surfaces and swapchains.
typedef struct vkj_surface_caps {
	uint32_t min_images, max_images;
	uint32_t cur_w, cur_h, min_w, min_h, max_w, max_h;
	uint32_t transforms, cur_transform, alpha, usage;
} vkj_surface_caps;
int vkj_surface_support(const vkj_gfx *g, uint32_t qfam, uint64_t surface);
VkResult vkj_surface_caps_get(const vkj_gfx *g, uint64_t surface, vkj_surface_caps *out);
// Up to max formats (format, colour space pairs) / present modes; returns how many.
uint32_t vkj_surface_formats(const vkj_gfx *g, uint64_t surface, uint32_t *formats, uint32_t *spaces, uint32_t max);
uint32_t vkj_present_modes(const vkj_gfx *g, uint64_t surface, uint32_t *modes, uint32_t max);
VkResult vkj_swapchain(const vkj_gfx *g, uint64_t surface, uint64_t old, uint32_t images, uint32_t format, uint32_t space,
	uint32_t w, uint32_t h, uint32_t transform, uint32_t alpha, uint32_t mode, uint64_t *out);
// Up to max images; *n is set to how many there are.
VkResult vkj_swapchain_images(const vkj_gfx *g, uint64_t sc, uint64_t *out, uint32_t max, uint32_t *n);
VkResult vkj_acquire(const vkj_gfx *g, uint64_t sc, uint64_t timeout_ns, uint64_t sem, uint32_t *index);
VkResult vkj_present(const vkj_gfx *g, VkQueue q, uint64_t sc, uint32_t index, uint64_t wait_sem);
VkResult vkj_queue_wait_idle(const vkj_gfx *g, VkQueue q);

#endif
