// shim.c: see shim.h and vkshim.go.
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "_cgo_export.h"

#define H(T, x) ((T)(uintptr_t)(x))

static void *vkj_lib;
static PFN_vkGetInstanceProcAddr vkj_gipa_fn;
static char vkj_err[512];

int vkj_load(void) {
	if (vkj_gipa_fn != NULL) {
		return 0;
	}
#ifdef __APPLE__
	// The LunarG SDK's loader, then MoltenVK itself (an ICD with its own
	// vkGetInstanceProcAddr).
	const char *names[] = {"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib"};
#else
	const char *names[] = {"libvulkan.so.1", "libvulkan.so"};
#endif
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		vkj_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (vkj_lib != NULL) {
			break;
		}
		const char *e = dlerror();
		strncpy(vkj_err, e ? e : "dlopen failed", sizeof(vkj_err) - 1);
	}
	if (vkj_lib == NULL) {
		return -1;
	}
	vkj_gipa_fn = (PFN_vkGetInstanceProcAddr)dlsym(vkj_lib, "vkGetInstanceProcAddr");
	if (vkj_gipa_fn == NULL) {
		strncpy(vkj_err, "libvulkan has no vkGetInstanceProcAddr", sizeof(vkj_err) - 1);
		return -1;
	}
	return 0;
}

const char *vkj_load_error(void) { return vkj_err; }

void *vkj_gipa(void) { return (void *)vkj_gipa_fn; }

int vkj_has_instance_layer(const char *name) {
	PFN_vkEnumerateInstanceLayerProperties f =
		(PFN_vkEnumerateInstanceLayerProperties)vkj_gipa_fn(NULL, "vkEnumerateInstanceLayerProperties");
	if (f == NULL) {
		return 0;
	}
	uint32_t n = 0;
	if (f(&n, NULL) != VK_SUCCESS || n == 0) {
		return 0;
	}
	VkLayerProperties *props = calloc(n, sizeof(*props));
	if (props == NULL) {
		return 0;
	}
	int found = 0;
	VkResult r = f(&n, props);
	if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
		for (uint32_t i = 0; i < n && !found; i++) {
			found = strcmp(props[i].layerName, name) == 0;
		}
	}
	free(props);
	return found;
}

int vkj_has_instance_extension(const char *name) {
	PFN_vkEnumerateInstanceExtensionProperties f =
		(PFN_vkEnumerateInstanceExtensionProperties)vkj_gipa_fn(NULL, "vkEnumerateInstanceExtensionProperties");
	if (f == NULL) {
		return 0;
	}
	uint32_t n = 0;
	if (f(NULL, &n, NULL) != VK_SUCCESS || n == 0) {
		return 0;
	}
	VkExtensionProperties *props = calloc(n, sizeof(*props));
	if (props == NULL) {
		return 0;
	}
	int found = 0;
	VkResult r = f(NULL, &n, props);
	if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
		for (uint32_t i = 0; i < n && !found; i++) {
			found = strcmp(props[i].extensionName, name) == 0;
		}
	}
	free(props);
	return found;
}

int vkj_has_device_extension(VkInstance inst, VkPhysicalDevice pd, const char *name) {
	PFN_vkEnumerateDeviceExtensionProperties f =
		(PFN_vkEnumerateDeviceExtensionProperties)vkj_gipa_fn(inst, "vkEnumerateDeviceExtensionProperties");
	if (f == NULL) {
		return 0;
	}
	uint32_t n = 0;
	if (f(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) {
		return 0;
	}
	VkExtensionProperties *props = calloc(n, sizeof(*props));
	if (props == NULL) {
		return 0;
	}
	int found = 0;
	VkResult r = f(pd, NULL, &n, props);
	if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
		for (uint32_t i = 0; i < n && !found; i++) {
			found = strcmp(props[i].extensionName, name) == 0;
		}
	}
	free(props);
	return found;
}

uint32_t vkj_queue_families(VkInstance inst, VkPhysicalDevice pd, vkj_qfam *out, uint32_t max) {
	PFN_vkGetPhysicalDeviceQueueFamilyProperties f =
		(PFN_vkGetPhysicalDeviceQueueFamilyProperties)vkj_gipa_fn(inst, "vkGetPhysicalDeviceQueueFamilyProperties");
	if (f == NULL) {
		return 0;
	}
	VkQueueFamilyProperties props[64];
	uint32_t n = 64;
	f(pd, &n, props);
	if (n > max) {
		n = max;
	}
	for (uint32_t i = 0; i < n; i++) {
		out[i].flags = props[i].queueFlags;
		out[i].count = props[i].queueCount;
		out[i].timestamp_bits = props[i].timestampValidBits;
	}
	return n;
}

// Error messages reported on this thread since the last vkj_capture_reset
// (the validation layer reports from the thread that made the call).
static __thread uint32_t vkj_cap_errors;
static __thread char vkj_cap_msg[1024];

void vkj_capture_reset(void) {
	vkj_cap_errors = 0;
	vkj_cap_msg[0] = 0;
}

uint32_t vkj_capture_errors(void) { return vkj_cap_errors; }

const char *vkj_capture_msg(void) { return vkj_cap_msg; }

static VKAPI_ATTR VkBool32 VKAPI_CALL vkj_debug_cb(VkDebugReportFlagsEXT flags, VkDebugReportObjectTypeEXT type,
	uint64_t object, size_t location, int32_t code, const char *layer, const char *msg, void *user) {
	(void)type;
	(void)object;
	(void)location;
	if ((flags & VK_DEBUG_REPORT_ERROR_BIT_EXT) != 0 && vkj_cap_errors++ == 0 && msg != NULL) {
		strncpy(vkj_cap_msg, msg, sizeof(vkj_cap_msg) - 1);
		vkj_cap_msg[sizeof(vkj_cap_msg) - 1] = 0;
	}
	vkjGoDebugReport((uintptr_t)user, (uint32_t)flags, code, (char *)layer, (char *)msg);
	return VK_FALSE;
}

void vkj_debug_info(VkDebugReportCallbackCreateInfoEXT *ci, uint32_t flags, uintptr_t user) {
	memset(ci, 0, sizeof(*ci));
	ci->sType = VK_STRUCTURE_TYPE_DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT;
	ci->flags = flags;
	ci->pfnCallback = vkj_debug_cb;
	ci->pUserData = (void *)user;
}

VkResult vkj_debug_create(VkInstance inst, uint32_t flags, uintptr_t user, uint64_t *out) {
	PFN_vkCreateDebugReportCallbackEXT f =
		(PFN_vkCreateDebugReportCallbackEXT)vkj_gipa_fn(inst, "vkCreateDebugReportCallbackEXT");
	if (f == NULL) {
		return VK_ERROR_EXTENSION_NOT_PRESENT;
	}
	VkDebugReportCallbackCreateInfoEXT ci;
	vkj_debug_info(&ci, flags, user);
	VkDebugReportCallbackEXT cb = VK_NULL_HANDLE;
	VkResult r = f(inst, &ci, NULL, &cb);
	*out = (uint64_t)(uintptr_t)cb;
	return r;
}

void vkj_debug_destroy(VkInstance inst, uint64_t cb) {
	PFN_vkDestroyDebugReportCallbackEXT f =
		(PFN_vkDestroyDebugReportCallbackEXT)vkj_gipa_fn(inst, "vkDestroyDebugReportCallbackEXT");
	if (f != NULL && cb != 0) {
		f(inst, H(VkDebugReportCallbackEXT, cb), NULL);
	}
}

vkj_dev *vkj_dev_new(void) { return calloc(1, sizeof(vkj_dev)); }

void vkj_dev_free(vkj_dev *d) { free(d); }

const char *vkj_dev_init(vkj_dev *d, VkInstance inst, VkDevice dev) {
	PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)vkj_gipa_fn(inst, "vkGetDeviceProcAddr");
	if (gdpa == NULL) {
		return "vkGetDeviceProcAddr";
	}
	d->dev = dev;
#define LOAD(name)                                               \
	d->name = (PFN_vk##name)gdpa(dev, "vk" #name);               \
	if (d->name == NULL) {                                       \
		return "vk" #name;                                       \
	}
	LOAD(QueueSubmit)
	LOAD(QueueWaitIdle)
	LOAD(WaitForFences)
	LOAD(ResetFences)
	LOAD(ResetCommandPool)
	LOAD(ResetDescriptorPool)
	LOAD(AllocateDescriptorSets)
	LOAD(UpdateDescriptorSets)
	LOAD(BeginCommandBuffer)
	LOAD(EndCommandBuffer)
	LOAD(CmdBindPipeline)
	LOAD(CmdBindDescriptorSets)
	LOAD(CmdPushConstants)
	LOAD(CmdDispatch)
	LOAD(CmdPipelineBarrier)
	LOAD(CmdCopyBuffer)
	LOAD(CmdWriteTimestamp)
	LOAD(CmdResetQueryPool)
	LOAD(GetQueryPoolResults)
	LOAD(CreateComputePipelines)
	LOAD(CmdWaitEvents)
	LOAD(DestroyDevice)
	LOAD(GetDeviceQueue)
	LOAD(CreateBuffer)
	LOAD(DestroyBuffer)
	LOAD(GetBufferMemoryRequirements)
	LOAD(AllocateMemory)
	LOAD(FreeMemory)
	LOAD(BindBufferMemory)
	LOAD(MapMemory)
	LOAD(UnmapMemory)
	LOAD(CreateCommandPool)
	LOAD(DestroyCommandPool)
	LOAD(AllocateCommandBuffers)
	LOAD(CreateFence)
	LOAD(DestroyFence)
	LOAD(CreateEvent)
	LOAD(DestroyEvent)
	LOAD(SetEvent)
	LOAD(ResetEvent)
	LOAD(CreateDescriptorPool)
	LOAD(DestroyDescriptorPool)
	LOAD(CreateQueryPool)
	LOAD(DestroyQueryPool)
	LOAD(CreateShaderModule)
	LOAD(DestroyShaderModule)
	LOAD(CreateDescriptorSetLayout)
	LOAD(DestroyDescriptorSetLayout)
	LOAD(CreatePipelineLayout)
	LOAD(DestroyPipelineLayout)
	LOAD(DestroyPipeline)
	LOAD(CreatePipelineCache)
	LOAD(DestroyPipelineCache)
	LOAD(GetPipelineCacheData)
#undef LOAD
	return NULL;
}

VkResult vkj_compute_pipeline(const vkj_dev *d, uint64_t cache, uint64_t module, uint64_t layout,
	const char *entry, uint32_t local_size, uint64_t *out) {
	VkSpecializationMapEntry me = {0};
	me.constantID = 0;
	me.offset = 0;
	me.size = sizeof(uint32_t);
	VkSpecializationInfo si = {0};
	si.mapEntryCount = 1;
	si.pMapEntries = &me;
	si.dataSize = sizeof(uint32_t);
	si.pData = &local_size;
	VkComputePipelineCreateInfo ci = {0};
	ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
	ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
	ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
	ci.stage.module = H(VkShaderModule, module);
	ci.stage.pName = entry;
	if (local_size != 0) {
		ci.stage.pSpecializationInfo = &si;
	}
	ci.layout = H(VkPipelineLayout, layout);
	ci.basePipelineIndex = -1;
	VkPipeline p = VK_NULL_HANDLE;
	VkResult r = d->CreateComputePipelines(d->dev, H(VkPipelineCache, cache), 1, &ci, NULL, &p);
	*out = (uint64_t)(uintptr_t)p;
	return r;
}

VkResult vkj_slot_reset(const vkj_dev *d, uint64_t fence, uint64_t cmd_pool, uint64_t desc_pool) {
	vkj_capture_reset();
	VkFence f = H(VkFence, fence);
	VkResult r = d->ResetFences(d->dev, 1, &f);
	if (r != VK_SUCCESS) {
		return r;
	}
	if (cmd_pool != 0) {
		r = d->ResetCommandPool(d->dev, H(VkCommandPool, cmd_pool), 0);
		if (r != VK_SUCCESS) {
			return r;
		}
	}
	if (desc_pool != 0) {
		r = d->ResetDescriptorPool(d->dev, H(VkDescriptorPool, desc_pool), 0);
	}
	return r;
}

VkResult vkj_begin(const vkj_dev *d, VkCommandBuffer cb) {
	VkCommandBufferBeginInfo bi = {0};
	bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
	bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
	return d->BeginCommandBuffer(cb, &bi);
}

// vkj_begin_reuse begins a command buffer that is submitted again after it
// completes (no ONE_TIME_SUBMIT): a frame graph's recorded GPU segment.
VkResult vkj_begin_reuse(const vkj_dev *d, VkCommandBuffer cb) {
	VkCommandBufferBeginInfo bi = {0};
	bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
	return d->BeginCommandBuffer(cb, &bi);
}

VkResult vkj_end(const vkj_dev *d, VkCommandBuffer cb) {
	VkResult r = d->EndCommandBuffer(cb);
	if (r == VK_SUCCESS && vkj_cap_errors != 0) {
		return VK_ERROR_VALIDATION_FAILED_EXT;
	}
	return r;
}

VkResult vkj_submit(const vkj_dev *d, VkQueue q, VkCommandBuffer cb, uint64_t fence) {
	VkSubmitInfo si = {0};
	si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
	si.commandBufferCount = 1;
	si.pCommandBuffers = &cb;
	return d->QueueSubmit(q, 1, &si, H(VkFence, fence));
}

VkResult vkj_wait(const vkj_dev *d, uint64_t fence, uint64_t timeout_ns) {
	VkFence f = H(VkFence, fence);
	return d->WaitForFences(d->dev, 1, &f, VK_TRUE, timeout_ns);
}

VkResult vkj_queue_idle(const vkj_dev *d, VkQueue q) { return d->QueueWaitIdle(q); }

void vkj_reset_queries(const vkj_dev *d, VkCommandBuffer cb, uint64_t pool, uint32_t first, uint32_t n) {
	d->CmdResetQueryPool(cb, H(VkQueryPool, pool), first, n);
}

void vkj_timestamp(const vkj_dev *d, VkCommandBuffer cb, uint32_t stage, uint64_t pool, uint32_t q) {
	d->CmdWriteTimestamp(cb, (VkPipelineStageFlagBits)stage, H(VkQueryPool, pool), q);
}

void vkj_barrier(const vkj_dev *d, VkCommandBuffer cb, uint32_t src_stage, uint32_t dst_stage,
	uint32_t src_access, uint32_t dst_access) {
	VkMemoryBarrier mb = {0};
	mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
	mb.srcAccessMask = src_access;
	mb.dstAccessMask = dst_access;
	d->CmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vkj_copy(const vkj_dev *d, VkCommandBuffer cb, uint64_t src, uint64_t dst,
	const VkBufferCopy *regions, uint32_t n) {
	d->CmdCopyBuffer(cb, H(VkBuffer, src), H(VkBuffer, dst), n, regions);
}

VkResult vkj_set(const vkj_dev *d, uint64_t pool, uint64_t layout, const vkj_desc *w, uint32_t n, uint64_t *out) {
	VkDescriptorSetLayout l = H(VkDescriptorSetLayout, layout);
	VkDescriptorSetAllocateInfo ai = {0};
	ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
	ai.descriptorPool = H(VkDescriptorPool, pool);
	ai.descriptorSetCount = 1;
	ai.pSetLayouts = &l;
	VkDescriptorSet set = VK_NULL_HANDLE;
	VkResult r = d->AllocateDescriptorSets(d->dev, &ai, &set);
	*out = (uint64_t)(uintptr_t)set;
	if (r != VK_SUCCESS) {
		return r;
	}
	VkDescriptorBufferInfo bi[8];
	VkWriteDescriptorSet ws[8];
	if (n > 8) {
		n = 8;
	}
	memset(ws, 0, sizeof(ws));
	for (uint32_t i = 0; i < n; i++) {
		bi[i].buffer = H(VkBuffer, w[i].buffer);
		bi[i].offset = w[i].offset;
		bi[i].range = w[i].range;
		ws[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
		ws[i].dstSet = set;
		ws[i].dstBinding = w[i].binding;
		ws[i].descriptorCount = 1;
		ws[i].descriptorType = (VkDescriptorType)w[i].type;
		ws[i].pBufferInfo = &bi[i];
	}
	if (n > 0) {
		d->UpdateDescriptorSets(d->dev, n, ws, 0, NULL);
	}
	return VK_SUCCESS;
}

void vkj_dispatch(const vkj_dev *d, VkCommandBuffer cb, uint64_t pipeline, uint64_t layout, uint64_t set,
	const uint32_t *params, uint32_t begin, uint32_t end, uint64_t items_per_group, uint32_t max_groups,
	uint64_t qpool, int32_t q, uint32_t stage0, uint32_t stage1) {
	VkPipelineLayout pl = H(VkPipelineLayout, layout);
	VkDescriptorSet s = H(VkDescriptorSet, set);
	d->CmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, H(VkPipeline, pipeline));
	d->CmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &s, 0, NULL);
	if (q >= 0) {
		d->CmdWriteTimestamp(cb, (VkPipelineStageFlagBits)stage0, H(VkQueryPool, qpool), (uint32_t)q);
	}
	uint32_t pc[10];
	memcpy(pc, params, 8 * sizeof(uint32_t));
	uint64_t b = begin;
	while (b < end) {
		uint64_t groups = ((uint64_t)end - b + items_per_group - 1) / items_per_group;
		if (groups > max_groups) {
			groups = max_groups;
		}
		uint64_t e = b + groups * items_per_group;
		if (e > end) {
			e = end;
		}
		pc[8] = (uint32_t)b;
		pc[9] = (uint32_t)e;
		d->CmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc), pc);
		d->CmdDispatch(cb, (uint32_t)groups, 1, 1);
		b = e;
	}
	if (q >= 0) {
		d->CmdWriteTimestamp(cb, (VkPipelineStageFlagBits)stage1, H(VkQueryPool, qpool), (uint32_t)q + 1);
	}
}

void vkj_wait_event(const vkj_dev *d, VkCommandBuffer cb, uint64_t event) {
	VkEvent e = H(VkEvent, event);
	VkMemoryBarrier mb = {0};
	mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
	mb.srcAccessMask = VK_ACCESS_HOST_WRITE_BIT;
	mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_SHADER_READ_BIT;
	d->CmdWaitEvents(cb, 1, &e, VK_PIPELINE_STAGE_HOST_BIT,
		VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 1, &mb, 0, NULL, 0, NULL);
}

VkResult vkj_queries(const vkj_dev *d, uint64_t pool, uint32_t first, uint32_t n, uint64_t *out) {
	return d->GetQueryPoolResults(d->dev, H(VkQueryPool, pool), first, n, (size_t)n * sizeof(uint64_t), out,
		sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
}
