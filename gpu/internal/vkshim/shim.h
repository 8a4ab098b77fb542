// shim.h: the loader and the compute table of package vkshim, used by
// package gpu (see vkshim.go for why it exists).
//
// Every function here takes plain values, handles, and pointers to plain
// arrays owned by the caller. Vulkan create-info structs are built on the C
// stack, so nothing here allocates. Non-dispatchable handles travel as
// uint64_t (their ABI on every 64-bit platform); dispatchable ones as their
// C pointer type.
#ifndef VKJ_SHIM_H
#define VKJ_SHIM_H 1

#include <stdint.h>
#include <stddef.h>
#define VK_NO_PROTOTYPES 1
#include <vulkan/vulkan.h>

// Loader.
int vkj_load(void);            // dlopen libvulkan.so.1; 0 on success
const char *vkj_load_error(void);
void *vkj_gipa(void);          // vkGetInstanceProcAddr, for vk.SetGetInstanceProcAddr

int vkj_has_instance_layer(const char *name);
int vkj_has_instance_extension(const char *name);
int vkj_has_device_extension(VkInstance inst, VkPhysicalDevice pd, const char *name);

// Queue family properties (VkQueueFamilyProperties without the extent).
typedef struct vkj_qfam {
	uint32_t flags;
	uint32_t count;
	uint32_t timestamp_bits;
} vkj_qfam;

uint32_t vkj_queue_families(VkInstance inst, VkPhysicalDevice pd, vkj_qfam *out, uint32_t max);

// Debug report (VK_EXT_debug_report). Messages go to the exported Go
// function vkjGoDebugReport with the user value given here.
void *vkj_debug_chain_info(uint32_t flags, uintptr_t user); // malloc'd; free with vkj_free
void vkj_free(void *p);
VkResult vkj_debug_create(VkInstance inst, uint32_t flags, uintptr_t user, uint64_t *out);
void vkj_debug_destroy(VkInstance inst, uint64_t cb);

// Capture of error messages per OS thread: the debug callback counts the
// error messages reported on the calling thread and keeps the first one.
// vkj_slot_reset resets the capture; vkj_end returns
// VK_ERROR_VALIDATION_FAILED_EXT when an error was reported on this thread
// since then (the caller keeps the whole recording on one thread).
void vkj_capture_reset(void);
uint32_t vkj_capture_errors(void);
const char *vkj_capture_msg(void);

// Device-level function table, loaded once per device with
// vkGetDeviceProcAddr (so calls go straight to the driver or the layers).
typedef struct vkj_dev {
	VkDevice dev;
	PFN_vkQueueSubmit QueueSubmit;
	PFN_vkQueueWaitIdle QueueWaitIdle;
	PFN_vkWaitForFences WaitForFences;
	PFN_vkResetFences ResetFences;
	PFN_vkResetCommandPool ResetCommandPool;
	PFN_vkResetDescriptorPool ResetDescriptorPool;
	PFN_vkAllocateDescriptorSets AllocateDescriptorSets;
	PFN_vkUpdateDescriptorSets UpdateDescriptorSets;
	PFN_vkBeginCommandBuffer BeginCommandBuffer;
	PFN_vkEndCommandBuffer EndCommandBuffer;
	PFN_vkCmdBindPipeline CmdBindPipeline;
	PFN_vkCmdBindDescriptorSets CmdBindDescriptorSets;
	PFN_vkCmdPushConstants CmdPushConstants;
	PFN_vkCmdDispatch CmdDispatch;
	PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
	PFN_vkCmdCopyBuffer CmdCopyBuffer;
	PFN_vkCmdWriteTimestamp CmdWriteTimestamp;
	PFN_vkCmdResetQueryPool CmdResetQueryPool;
	PFN_vkGetQueryPoolResults GetQueryPoolResults;
	PFN_vkCreateComputePipelines CreateComputePipelines;
	PFN_vkCmdWaitEvents CmdWaitEvents;
} vkj_dev;

// vkj_dev_init fills d; it returns NULL or the name of a missing function.
const char *vkj_dev_init(vkj_dev *d, VkInstance inst, VkDevice dev);
vkj_dev *vkj_dev_new(void);
void vkj_dev_free(vkj_dev *d);

// One buffer descriptor write (layout shared with Go's descWrite).
typedef struct vkj_desc {
	uint64_t buffer;
	uint64_t offset;
	uint64_t range;
	uint32_t binding;
	uint32_t type; // VkDescriptorType
} vkj_desc;

VkResult vkj_compute_pipeline(const vkj_dev *d, uint64_t cache, uint64_t module, uint64_t layout,
	const char *entry, uint32_t local_size, uint64_t *out);

VkResult vkj_slot_reset(const vkj_dev *d, uint64_t fence, uint64_t cmd_pool, uint64_t desc_pool);
VkResult vkj_begin(const vkj_dev *d, VkCommandBuffer cb);
VkResult vkj_end(const vkj_dev *d, VkCommandBuffer cb);
VkResult vkj_submit(const vkj_dev *d, VkQueue q, VkCommandBuffer cb, uint64_t fence);
VkResult vkj_wait(const vkj_dev *d, uint64_t fence, uint64_t timeout_ns);
VkResult vkj_queue_idle(const vkj_dev *d, VkQueue q);
void vkj_reset_queries(const vkj_dev *d, VkCommandBuffer cb, uint64_t pool, uint32_t first, uint32_t n);
void vkj_timestamp(const vkj_dev *d, VkCommandBuffer cb, uint32_t stage, uint64_t pool, uint32_t q);
void vkj_barrier(const vkj_dev *d, VkCommandBuffer cb, uint32_t src_stage, uint32_t dst_stage,
	uint32_t src_access, uint32_t dst_access);
void vkj_copy(const vkj_dev *d, VkCommandBuffer cb, uint64_t src, uint64_t dst,
	const VkBufferCopy *regions, uint32_t n);
VkResult vkj_set(const vkj_dev *d, uint64_t pool, uint64_t layout, const vkj_desc *w, uint32_t n, uint64_t *out);
// vkj_dispatch binds pipeline and set and dispatches items [begin, end) in
// chunks of at most max_groups workgroups, each with its own push constants
// (params[0..7], begin, end). q >= 0 writes timestamps q and q+1 around it,
// at pipeline stages stage0 and stage1.
void vkj_dispatch(const vkj_dev *d, VkCommandBuffer cb, uint64_t pipeline, uint64_t layout, uint64_t set,
	const uint32_t *params, uint32_t begin, uint32_t end, uint64_t items_per_group, uint32_t max_groups,
	uint64_t qpool, int32_t q, uint32_t stage0, uint32_t stage1);
// vkj_wait_event makes the command buffer wait for a host-set event before
// its later transfer and compute work (FaultStall).
void vkj_wait_event(const vkj_dev *d, VkCommandBuffer cb, uint64_t event);
VkResult vkj_queries(const vkj_dev *d, uint64_t pool, uint32_t first, uint32_t n, uint64_t *out);

#endif
