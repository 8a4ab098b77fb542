// shim.h: the loader, the instance, and the compute table of package
// vkshim, used by package gpu (see vkshim.go for why it exists).
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
void *vkj_gipa(void);          // vkGetInstanceProcAddr: the process's one function loader

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
// vkj_debug_info fills *ci for the C callback that reports to Go.
void vkj_debug_info(VkDebugReportCallbackCreateInfoEXT *ci, uint32_t flags, uintptr_t user);
VkResult vkj_debug_create(VkInstance inst, uint32_t flags, uintptr_t user, uint64_t *out);
void vkj_debug_destroy(VkInstance inst, uint64_t cb);

// Instance and physical devices (obj.c). Names (layers, extensions) come
// as n NUL-terminated strings one after another in names; at most
// VKJ_MAX_NAMES. The pointer arrays Vulkan reads are built on the C stack.
#define VKJ_MAX_NAMES 64
// vkj_create_instance creates an instance; debug_flags != 0 chains a
// VkDebugReportCallbackCreateInfoEXT (so that vkCreateInstance's and
// vkDestroyInstance's messages are reported too) with user as its value.
VkResult vkj_create_instance(const char *app, const char *engine, uint32_t api_version, uint32_t flags,
	const char *layers, uint32_t nlayers, const char *exts, uint32_t nexts,
	uint32_t debug_flags, uintptr_t user, VkInstance *out);
void vkj_destroy_instance(VkInstance inst);
// vkj_physical_devices writes up to max devices into out and their number
// into *n (VK_INCOMPLETE when there were more).
VkResult vkj_physical_devices(VkInstance inst, VkPhysicalDevice *out, uint32_t max, uint32_t *n);
void vkj_physical_device_properties(VkInstance inst, VkPhysicalDevice pd, VkPhysicalDeviceProperties *out);
void vkj_memory_properties(VkInstance inst, VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties *out);
int vkj_robust_buffer_access(VkInstance inst, VkPhysicalDevice pd); // the feature robustBufferAccess
// Bits of vkj_shader_type_features and vkj_create_device's types: the
// VkPhysicalDeviceFeatures that let a shader use 64-bit floats, 64-bit
// integers and 16-bit integers (SPIR-V capabilities Float64, Int64, Int16).
#define VKJ_FEATURE_FLOAT64 1u
#define VKJ_FEATURE_INT64 2u
#define VKJ_FEATURE_INT16 4u
uint32_t vkj_shader_type_features(VkInstance inst, VkPhysicalDevice pd); // VKJ_FEATURE_* the device has
// vkj_scalar_block_layout reports the feature scalarBlockLayout of
// VK_EXT_scalar_block_layout, through vkGetPhysicalDeviceFeatures2KHR (the
// instance must have VK_KHR_get_physical_device_properties2 enabled; 0
// without it).
int vkj_scalar_block_layout(VkInstance inst, VkPhysicalDevice pd);
// vkj_create_device creates a device with one queue of family qfam
// (priority 1), the layers and extensions given as for the instance,
// robustBufferAccess when robust != 0, scalarBlockLayout when scalar
// != 0 (exts must then name VK_EXT_scalar_block_layout), and the
// VKJ_FEATURE_* features in types.
VkResult vkj_create_device(VkInstance inst, VkPhysicalDevice pd, uint32_t qfam,
	const char *layers, uint32_t nlayers, const char *exts, uint32_t nexts, int robust, int scalar, uint32_t types, VkDevice *out);
// vkj_destroy_device_gipa destroys a device whose table could not be
// loaded (vkDestroyDevice through vkGetInstanceProcAddr).
void vkj_destroy_device_gipa(VkInstance inst, VkDevice dev);

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

	// Objects (obj.c).
	PFN_vkDestroyDevice DestroyDevice;
	PFN_vkGetDeviceQueue GetDeviceQueue;
	PFN_vkCreateBuffer CreateBuffer;
	PFN_vkDestroyBuffer DestroyBuffer;
	PFN_vkGetBufferMemoryRequirements GetBufferMemoryRequirements;
	PFN_vkAllocateMemory AllocateMemory;
	PFN_vkFreeMemory FreeMemory;
	PFN_vkBindBufferMemory BindBufferMemory;
	PFN_vkMapMemory MapMemory;
	PFN_vkUnmapMemory UnmapMemory;
	PFN_vkCreateCommandPool CreateCommandPool;
	PFN_vkDestroyCommandPool DestroyCommandPool;
	PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
	PFN_vkCreateFence CreateFence;
	PFN_vkDestroyFence DestroyFence;
	PFN_vkCreateEvent CreateEvent;
	PFN_vkDestroyEvent DestroyEvent;
	PFN_vkSetEvent SetEvent;
	PFN_vkResetEvent ResetEvent;
	PFN_vkCreateDescriptorPool CreateDescriptorPool;
	PFN_vkDestroyDescriptorPool DestroyDescriptorPool;
	PFN_vkCreateQueryPool CreateQueryPool;
	PFN_vkDestroyQueryPool DestroyQueryPool;
	PFN_vkCreateShaderModule CreateShaderModule;
	PFN_vkDestroyShaderModule DestroyShaderModule;
	PFN_vkCreateDescriptorSetLayout CreateDescriptorSetLayout;
	PFN_vkDestroyDescriptorSetLayout DestroyDescriptorSetLayout;
	PFN_vkCreatePipelineLayout CreatePipelineLayout;
	PFN_vkDestroyPipelineLayout DestroyPipelineLayout;
	PFN_vkDestroyPipeline DestroyPipeline;
	PFN_vkCreatePipelineCache CreatePipelineCache;
	PFN_vkDestroyPipelineCache DestroyPipelineCache;
	PFN_vkGetPipelineCacheData GetPipelineCacheData;
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

// vkj_compute_pipeline creates a compute pipeline of module's entry point,
// with specialization constant 0 set to local_size, or with no
// specialization when local_size is 0 (the shader's constants keep their
// defaults).
VkResult vkj_compute_pipeline(const vkj_dev *d, uint64_t cache, uint64_t module, uint64_t layout,
	const char *entry, uint32_t local_size, uint64_t *out);

VkResult vkj_slot_reset(const vkj_dev *d, uint64_t fence, uint64_t cmd_pool, uint64_t desc_pool);
VkResult vkj_begin(const vkj_dev *d, VkCommandBuffer cb);
VkResult vkj_begin_reuse(const vkj_dev *d, VkCommandBuffer cb);
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

// Object creation and destruction of the compute backend (obj.c). Each
// creates one object into *out (0 on failure).
enum {
	VKJ_DEV_BUFFER = 1,
	VKJ_DEV_MEMORY,
	VKJ_DEV_COMMAND_POOL,
	VKJ_DEV_FENCE,
	VKJ_DEV_EVENT,
	VKJ_DEV_DESC_POOL,
	VKJ_DEV_QUERY_POOL,
	VKJ_DEV_SHADER_MODULE,
	VKJ_DEV_SET_LAYOUT,
	VKJ_DEV_PIPE_LAYOUT,
	VKJ_DEV_PIPELINE,
	VKJ_DEV_PIPE_CACHE,
};
// vkj_dev_destroy destroys (or frees) handle h of the given kind; 0 is ignored.
void vkj_dev_destroy(const vkj_dev *d, int kind, uint64_t h);
void vkj_destroy_device(const vkj_dev *d); // the device itself, after every object
VkQueue vkj_device_queue(const vkj_dev *d, uint32_t qfam, uint32_t index);
// vkj_buffer creates an exclusive buffer and returns its memory
// requirements (size, memoryTypeBits).
VkResult vkj_buffer(const vkj_dev *d, uint64_t size, uint32_t usage, uint64_t *out, uint64_t *req_size, uint32_t *type_bits);
VkResult vkj_memory(const vkj_dev *d, uint64_t size, uint32_t type_index, uint64_t *out);
VkResult vkj_bind_buffer(const vkj_dev *d, uint64_t buf, uint64_t mem, uint64_t offset);
// vkj_map maps size bytes of mem at offset; NULL with *r set on failure.
void *vkj_map(const vkj_dev *d, uint64_t mem, uint64_t offset, uint64_t size, VkResult *r);
void vkj_unmap(const vkj_dev *d, uint64_t mem);
// Makers shared by both function tables (vkj_dev, gfx_shim.h's vkj_gfx):
// the caller passes its table's create function and device.
VkResult vkj_make_command_pool(PFN_vkCreateCommandPool create, VkDevice dev, uint32_t qfam, uint32_t flags, uint64_t *out);
VkResult vkj_make_fence(PFN_vkCreateFence create, VkDevice dev, int signaled, uint64_t *out);
VkResult vkj_make_shader_module(PFN_vkCreateShaderModule create, VkDevice dev, const uint32_t *code, size_t size, uint64_t *out);

VkResult vkj_dev_command_pool(const vkj_dev *d, uint32_t qfam, uint32_t flags, uint64_t *out);
VkResult vkj_primary_cb(const vkj_dev *d, uint64_t pool, VkCommandBuffer *out); // one primary command buffer
VkResult vkj_dev_fence(const vkj_dev *d, int signaled, uint64_t *out);
VkResult vkj_event(const vkj_dev *d, uint64_t *out);
VkResult vkj_event_set(const vkj_dev *d, uint64_t ev, int set); // vkSetEvent, or vkResetEvent when set == 0
// vkj_desc_pool: a pool of max_sets sets with the n (type, count) pairs in
// sizes (layout of VkDescriptorPoolSize).
VkResult vkj_desc_pool(const vkj_dev *d, uint32_t max_sets, const VkDescriptorPoolSize *sizes, uint32_t n, uint64_t *out);
VkResult vkj_timestamp_pool(const vkj_dev *d, uint32_t count, uint64_t *out);
VkResult vkj_dev_shader_module(const vkj_dev *d, const uint32_t *code, size_t size, uint64_t *out);
// One binding of a descriptor set layout (VkDescriptorSetLayoutBinding
// without pImmutableSamplers); at most VKJ_MAX_BINDINGS.
#define VKJ_MAX_BINDINGS 32
typedef struct vkj_binding {
	uint32_t binding;
	uint32_t type;
	uint32_t count;
	uint32_t stages;
} vkj_binding;
VkResult vkj_set_layout(const vkj_dev *d, const vkj_binding *b, uint32_t n, uint64_t *out);
// vkj_pipe_layout: one set layout and one push-constant range [0, pc_size) for pc_stages.
VkResult vkj_pipe_layout(const vkj_dev *d, uint64_t set_layout, uint32_t pc_stages, uint32_t pc_size, uint64_t *out);
VkResult vkj_pipe_cache(const vkj_dev *d, const void *data, size_t size, uint64_t *out);
// vkj_pipe_cache_data: vkGetPipelineCacheData (data NULL: *size is set to the size).
VkResult vkj_pipe_cache_data(const vkj_dev *d, uint64_t cache, size_t *size, void *data);

#endif
