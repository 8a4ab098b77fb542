// obj.c: creation and destruction of the instance, the device and the
// compute backend's objects (see shim.h and obj.go). Instance-level
// functions come from vkj_gipa() (the process's one loader), device-level
// ones from the device's table (vkGetDeviceProcAddr, vkj_dev_init). Every
// create-info struct and every array Vulkan reads is on the C stack.
#include <stdlib.h>
#include <string.h>
#include "shim.h"

#define H(T, x) ((T)(uintptr_t)(x))
#define U64(x) ((uint64_t)(uintptr_t)(x))

// split points ptrs[i] at the n NUL-terminated strings packed in names.
static uint32_t split(const char *names, uint32_t n, const char **ptrs) {
	if (n > VKJ_MAX_NAMES) {
		n = VKJ_MAX_NAMES;
	}
	for (uint32_t i = 0; i < n; i++) {
		ptrs[i] = names;
		names += strlen(names) + 1;
	}
	return n;
}

static void *instance_fn(VkInstance inst, const char *name) {
	PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)vkj_gipa();
	return gipa == NULL ? NULL : (void *)gipa(inst, name);
}

VkResult vkj_create_instance(const char *app, const char *engine, uint32_t api_version, uint32_t flags,
	const char *layers, uint32_t nlayers, const char *exts, uint32_t nexts,
	uint32_t debug_flags, uintptr_t user, VkInstance *out) {
	*out = VK_NULL_HANDLE;
	PFN_vkCreateInstance f = (PFN_vkCreateInstance)instance_fn(NULL, "vkCreateInstance");
	if (f == NULL) {
		return VK_ERROR_INITIALIZATION_FAILED;
	}
	if (nlayers > VKJ_MAX_NAMES || nexts > VKJ_MAX_NAMES) {
		return VK_ERROR_TOO_MANY_OBJECTS;
	}
	const char *lp[VKJ_MAX_NAMES], *ep[VKJ_MAX_NAMES];
	VkApplicationInfo ai;
	memset(&ai, 0, sizeof(ai));
	ai.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
	ai.pApplicationName = app;
	ai.pEngineName = engine;
	ai.apiVersion = api_version;
	VkInstanceCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
	ci.flags = flags;
	ci.pApplicationInfo = &ai;
	ci.enabledLayerCount = split(layers, nlayers, lp);
	ci.ppEnabledLayerNames = lp;
	ci.enabledExtensionCount = split(exts, nexts, ep);
	ci.ppEnabledExtensionNames = ep;
	VkDebugReportCallbackCreateInfoEXT dci;
	if (debug_flags != 0) {
		vkj_debug_info(&dci, debug_flags, user);
		ci.pNext = &dci;
	}
	return f(&ci, NULL, out);
}

void vkj_destroy_instance(VkInstance inst) {
	PFN_vkDestroyInstance f = (PFN_vkDestroyInstance)instance_fn(inst, "vkDestroyInstance");
	if (f != NULL && inst != VK_NULL_HANDLE) {
		f(inst, NULL);
	}
}

VkResult vkj_physical_devices(VkInstance inst, VkPhysicalDevice *out, uint32_t max, uint32_t *n) {
	*n = 0;
	PFN_vkEnumeratePhysicalDevices f = (PFN_vkEnumeratePhysicalDevices)instance_fn(inst, "vkEnumeratePhysicalDevices");
	if (f == NULL) {
		return VK_ERROR_INITIALIZATION_FAILED;
	}
	*n = max;
	return f(inst, n, out);
}

void vkj_physical_device_properties(VkInstance inst, VkPhysicalDevice pd, VkPhysicalDeviceProperties *out) {
	memset(out, 0, sizeof(*out));
	PFN_vkGetPhysicalDeviceProperties f =
		(PFN_vkGetPhysicalDeviceProperties)instance_fn(inst, "vkGetPhysicalDeviceProperties");
	if (f != NULL) {
		f(pd, out);
	}
}

void vkj_memory_properties(VkInstance inst, VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties *out) {
	memset(out, 0, sizeof(*out));
	PFN_vkGetPhysicalDeviceMemoryProperties f =
		(PFN_vkGetPhysicalDeviceMemoryProperties)instance_fn(inst, "vkGetPhysicalDeviceMemoryProperties");
	if (f != NULL) {
		f(pd, out);
	}
}

int vkj_robust_buffer_access(VkInstance inst, VkPhysicalDevice pd) {
	PFN_vkGetPhysicalDeviceFeatures f = (PFN_vkGetPhysicalDeviceFeatures)instance_fn(inst, "vkGetPhysicalDeviceFeatures");
	if (f == NULL) {
		return 0;
	}
	VkPhysicalDeviceFeatures feat;
	memset(&feat, 0, sizeof(feat));
	f(pd, &feat);
	return feat.robustBufferAccess == VK_TRUE;
}

uint32_t vkj_shader_type_features(VkInstance inst, VkPhysicalDevice pd) {
	PFN_vkGetPhysicalDeviceFeatures f = (PFN_vkGetPhysicalDeviceFeatures)instance_fn(inst, "vkGetPhysicalDeviceFeatures");
	if (f == NULL) {
		return 0;
	}
	VkPhysicalDeviceFeatures feat;
	memset(&feat, 0, sizeof(feat));
	f(pd, &feat);
	uint32_t m = 0;
	if (feat.shaderFloat64 == VK_TRUE) {
		m |= VKJ_FEATURE_FLOAT64;
	}
	if (feat.shaderInt64 == VK_TRUE) {
		m |= VKJ_FEATURE_INT64;
	}
	if (feat.shaderInt16 == VK_TRUE) {
		m |= VKJ_FEATURE_INT16;
	}
	return m;
}

int vkj_scalar_block_layout(VkInstance inst, VkPhysicalDevice pd) {
	PFN_vkGetPhysicalDeviceFeatures2KHR f =
		(PFN_vkGetPhysicalDeviceFeatures2KHR)instance_fn(inst, "vkGetPhysicalDeviceFeatures2KHR");
	if (f == NULL) {
		return 0;
	}
	VkPhysicalDeviceScalarBlockLayoutFeaturesEXT sb;
	memset(&sb, 0, sizeof(sb));
	sb.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES_EXT;
	VkPhysicalDeviceFeatures2KHR feat;
	memset(&feat, 0, sizeof(feat));
	feat.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2_KHR;
	feat.pNext = &sb;
	f(pd, &feat);
	return sb.scalarBlockLayout == VK_TRUE;
}

VkResult vkj_create_device(VkInstance inst, VkPhysicalDevice pd, uint32_t qfam,
	const char *layers, uint32_t nlayers, const char *exts, uint32_t nexts, int robust, int scalar, uint32_t types, VkDevice *out) {
	*out = VK_NULL_HANDLE;
	PFN_vkCreateDevice f = (PFN_vkCreateDevice)instance_fn(inst, "vkCreateDevice");
	if (f == NULL) {
		return VK_ERROR_INITIALIZATION_FAILED;
	}
	if (nlayers > VKJ_MAX_NAMES || nexts > VKJ_MAX_NAMES) {
		return VK_ERROR_TOO_MANY_OBJECTS;
	}
	const char *lp[VKJ_MAX_NAMES], *ep[VKJ_MAX_NAMES];
	float priority = 1.0f;
	VkDeviceQueueCreateInfo qi;
	memset(&qi, 0, sizeof(qi));
	qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
	qi.queueFamilyIndex = qfam;
	qi.queueCount = 1;
	qi.pQueuePriorities = &priority;
	VkPhysicalDeviceFeatures feat;
	memset(&feat, 0, sizeof(feat));
	feat.robustBufferAccess = robust ? VK_TRUE : VK_FALSE;
	feat.shaderFloat64 = (types & VKJ_FEATURE_FLOAT64) ? VK_TRUE : VK_FALSE;
	feat.shaderInt64 = (types & VKJ_FEATURE_INT64) ? VK_TRUE : VK_FALSE;
	feat.shaderInt16 = (types & VKJ_FEATURE_INT16) ? VK_TRUE : VK_FALSE;
	VkDeviceCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
	ci.queueCreateInfoCount = 1;
	ci.pQueueCreateInfos = &qi;
	ci.enabledLayerCount = split(layers, nlayers, lp);
	ci.ppEnabledLayerNames = lp;
	ci.enabledExtensionCount = split(exts, nexts, ep);
	ci.ppEnabledExtensionNames = ep;
	ci.pEnabledFeatures = &feat;
	VkPhysicalDeviceScalarBlockLayoutFeaturesEXT sb;
	memset(&sb, 0, sizeof(sb));
	sb.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES_EXT;
	sb.scalarBlockLayout = VK_TRUE;
	if (scalar) {
		ci.pNext = &sb;
	}
	return f(pd, &ci, NULL, out);
}

void vkj_destroy_device_gipa(VkInstance inst, VkDevice dev) {
	PFN_vkDestroyDevice f = (PFN_vkDestroyDevice)instance_fn(inst, "vkDestroyDevice");
	if (f != NULL && dev != VK_NULL_HANDLE) {
		f(dev, NULL);
	}
}

void vkj_dev_destroy(const vkj_dev *d, int kind, uint64_t h) {
	if (h == 0) {
		return;
	}
	VkDevice dev = d->dev;
	switch (kind) {
	case VKJ_DEV_BUFFER: d->DestroyBuffer(dev, H(VkBuffer, h), NULL); break;
	case VKJ_DEV_MEMORY: d->FreeMemory(dev, H(VkDeviceMemory, h), NULL); break;
	case VKJ_DEV_COMMAND_POOL: d->DestroyCommandPool(dev, H(VkCommandPool, h), NULL); break;
	case VKJ_DEV_FENCE: d->DestroyFence(dev, H(VkFence, h), NULL); break;
	case VKJ_DEV_EVENT: d->DestroyEvent(dev, H(VkEvent, h), NULL); break;
	case VKJ_DEV_DESC_POOL: d->DestroyDescriptorPool(dev, H(VkDescriptorPool, h), NULL); break;
	case VKJ_DEV_QUERY_POOL: d->DestroyQueryPool(dev, H(VkQueryPool, h), NULL); break;
	case VKJ_DEV_SHADER_MODULE: d->DestroyShaderModule(dev, H(VkShaderModule, h), NULL); break;
	case VKJ_DEV_SET_LAYOUT: d->DestroyDescriptorSetLayout(dev, H(VkDescriptorSetLayout, h), NULL); break;
	case VKJ_DEV_PIPE_LAYOUT: d->DestroyPipelineLayout(dev, H(VkPipelineLayout, h), NULL); break;
	case VKJ_DEV_PIPELINE: d->DestroyPipeline(dev, H(VkPipeline, h), NULL); break;
	case VKJ_DEV_PIPE_CACHE: d->DestroyPipelineCache(dev, H(VkPipelineCache, h), NULL); break;
	}
}

void vkj_destroy_device(const vkj_dev *d) {
	if (d->dev != VK_NULL_HANDLE) {
		d->DestroyDevice(d->dev, NULL);
	}
}

VkQueue vkj_device_queue(const vkj_dev *d, uint32_t qfam, uint32_t index) {
	VkQueue q = VK_NULL_HANDLE;
	d->GetDeviceQueue(d->dev, qfam, index, &q);
	return q;
}

VkResult vkj_buffer(const vkj_dev *d, uint64_t size, uint32_t usage, uint64_t *out, uint64_t *req_size, uint32_t *type_bits) {
	VkBufferCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
	ci.size = size;
	ci.usage = usage;
	ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
	VkBuffer b = VK_NULL_HANDLE;
	VkResult r = d->CreateBuffer(d->dev, &ci, NULL, &b);
	*out = U64(b);
	*req_size = 0;
	*type_bits = 0;
	if (r == VK_SUCCESS) {
		VkMemoryRequirements req;
		memset(&req, 0, sizeof(req));
		d->GetBufferMemoryRequirements(d->dev, b, &req);
		*req_size = req.size;
		*type_bits = req.memoryTypeBits;
	}
	return r;
}

VkResult vkj_memory(const vkj_dev *d, uint64_t size, uint32_t type_index, uint64_t *out) {
	VkMemoryAllocateInfo ai;
	memset(&ai, 0, sizeof(ai));
	ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
	ai.allocationSize = size;
	ai.memoryTypeIndex = type_index;
	VkDeviceMemory m = VK_NULL_HANDLE;
	VkResult r = d->AllocateMemory(d->dev, &ai, NULL, &m);
	*out = U64(m);
	return r;
}

VkResult vkj_bind_buffer(const vkj_dev *d, uint64_t buf, uint64_t mem, uint64_t offset) {
	return d->BindBufferMemory(d->dev, H(VkBuffer, buf), H(VkDeviceMemory, mem), offset);
}

void *vkj_map(const vkj_dev *d, uint64_t mem, uint64_t offset, uint64_t size, VkResult *r) {
	void *p = NULL;
	*r = d->MapMemory(d->dev, H(VkDeviceMemory, mem), offset, size, 0, &p);
	return *r == VK_SUCCESS ? p : NULL;
}

void vkj_unmap(const vkj_dev *d, uint64_t mem) { d->UnmapMemory(d->dev, H(VkDeviceMemory, mem)); }

// The makers below serve both function tables (vkj_dev here, vkj_gfx in
// gfx_shim.c): each takes the table's function and device.

VkResult vkj_make_command_pool(PFN_vkCreateCommandPool create, VkDevice dev, uint32_t qfam, uint32_t flags, uint64_t *out) {
	VkCommandPoolCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
	ci.flags = flags;
	ci.queueFamilyIndex = qfam;
	VkCommandPool p = VK_NULL_HANDLE;
	VkResult r = create(dev, &ci, NULL, &p);
	*out = U64(p);
	return r;
}

VkResult vkj_make_fence(PFN_vkCreateFence create, VkDevice dev, int signaled, uint64_t *out) {
	VkFenceCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
	if (signaled) {
		ci.flags = VK_FENCE_CREATE_SIGNALED_BIT;
	}
	VkFence f = VK_NULL_HANDLE;
	VkResult r = create(dev, &ci, NULL, &f);
	*out = U64(f);
	return r;
}

VkResult vkj_make_shader_module(PFN_vkCreateShaderModule create, VkDevice dev, const uint32_t *code, size_t size, uint64_t *out) {
	VkShaderModuleCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
	ci.codeSize = size;
	ci.pCode = code;
	VkShaderModule m = VK_NULL_HANDLE;
	VkResult r = create(dev, &ci, NULL, &m);
	*out = U64(m);
	return r;
}

VkResult vkj_dev_command_pool(const vkj_dev *d, uint32_t qfam, uint32_t flags, uint64_t *out) {
	return vkj_make_command_pool(d->CreateCommandPool, d->dev, qfam, flags, out);
}

VkResult vkj_primary_cb(const vkj_dev *d, uint64_t pool, VkCommandBuffer *out) {
	VkCommandBufferAllocateInfo ai;
	memset(&ai, 0, sizeof(ai));
	ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
	ai.commandPool = H(VkCommandPool, pool);
	ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
	ai.commandBufferCount = 1;
	*out = VK_NULL_HANDLE;
	return d->AllocateCommandBuffers(d->dev, &ai, out);
}

VkResult vkj_dev_fence(const vkj_dev *d, int signaled, uint64_t *out) {
	return vkj_make_fence(d->CreateFence, d->dev, signaled, out);
}

VkResult vkj_event(const vkj_dev *d, uint64_t *out) {
	VkEventCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO;
	VkEvent e = VK_NULL_HANDLE;
	VkResult r = d->CreateEvent(d->dev, &ci, NULL, &e);
	*out = U64(e);
	return r;
}

VkResult vkj_event_set(const vkj_dev *d, uint64_t ev, int set) {
	if (set) {
		return d->SetEvent(d->dev, H(VkEvent, ev));
	}
	return d->ResetEvent(d->dev, H(VkEvent, ev));
}

VkResult vkj_desc_pool(const vkj_dev *d, uint32_t max_sets, const VkDescriptorPoolSize *sizes, uint32_t n, uint64_t *out) {
	VkDescriptorPoolCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
	ci.maxSets = max_sets;
	ci.poolSizeCount = n;
	ci.pPoolSizes = sizes;
	VkDescriptorPool p = VK_NULL_HANDLE;
	VkResult r = d->CreateDescriptorPool(d->dev, &ci, NULL, &p);
	*out = U64(p);
	return r;
}

VkResult vkj_timestamp_pool(const vkj_dev *d, uint32_t count, uint64_t *out) {
	VkQueryPoolCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
	ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
	ci.queryCount = count;
	VkQueryPool p = VK_NULL_HANDLE;
	VkResult r = d->CreateQueryPool(d->dev, &ci, NULL, &p);
	*out = U64(p);
	return r;
}

VkResult vkj_dev_shader_module(const vkj_dev *d, const uint32_t *code, size_t size, uint64_t *out) {
	return vkj_make_shader_module(d->CreateShaderModule, d->dev, code, size, out);
}

VkResult vkj_set_layout(const vkj_dev *d, const vkj_binding *b, uint32_t n, uint64_t *out) {
	*out = 0;
	if (n > VKJ_MAX_BINDINGS) {
		return VK_ERROR_TOO_MANY_OBJECTS;
	}
	VkDescriptorSetLayoutBinding lb[VKJ_MAX_BINDINGS];
	memset(lb, 0, sizeof(lb));
	for (uint32_t i = 0; i < n; i++) {
		lb[i].binding = b[i].binding;
		lb[i].descriptorType = (VkDescriptorType)b[i].type;
		lb[i].descriptorCount = b[i].count;
		lb[i].stageFlags = b[i].stages;
	}
	VkDescriptorSetLayoutCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
	ci.bindingCount = n;
	ci.pBindings = n > 0 ? lb : NULL;
	VkDescriptorSetLayout l = VK_NULL_HANDLE;
	VkResult r = d->CreateDescriptorSetLayout(d->dev, &ci, NULL, &l);
	*out = U64(l);
	return r;
}

VkResult vkj_pipe_layout(const vkj_dev *d, uint64_t set_layout, uint32_t pc_stages, uint32_t pc_size, uint64_t *out) {
	VkDescriptorSetLayout sl = H(VkDescriptorSetLayout, set_layout);
	VkPushConstantRange pr;
	memset(&pr, 0, sizeof(pr));
	pr.stageFlags = pc_stages;
	pr.offset = 0;
	pr.size = pc_size;
	VkPipelineLayoutCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
	ci.setLayoutCount = 1;
	ci.pSetLayouts = &sl;
	ci.pushConstantRangeCount = pc_size > 0 ? 1 : 0;
	ci.pPushConstantRanges = pc_size > 0 ? &pr : NULL;
	VkPipelineLayout l = VK_NULL_HANDLE;
	VkResult r = d->CreatePipelineLayout(d->dev, &ci, NULL, &l);
	*out = U64(l);
	return r;
}

VkResult vkj_pipe_cache(const vkj_dev *d, const void *data, size_t size, uint64_t *out) {
	VkPipelineCacheCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
	ci.initialDataSize = size;
	ci.pInitialData = size > 0 ? data : NULL;
	VkPipelineCache c = VK_NULL_HANDLE;
	VkResult r = d->CreatePipelineCache(d->dev, &ci, NULL, &c);
	*out = U64(c);
	return r;
}

VkResult vkj_pipe_cache_data(const vkj_dev *d, uint64_t cache, size_t *size, void *data) {
	return d->GetPipelineCacheData(d->dev, H(VkPipelineCache, cache), size, data);
}
