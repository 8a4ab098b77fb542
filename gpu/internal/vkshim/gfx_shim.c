// gfx_shim.c: see gfx_shim.h and gfx.go.
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "gfx_shim.h"

#define H(T, x) ((T)(uintptr_t)(x))
#define U64(x) ((uint64_t)(uintptr_t)(x))

vkj_gfx *vkj_gfx_new(void) { return calloc(1, sizeof(vkj_gfx)); }

void vkj_gfx_free(vkj_gfx *g) { free(g); }

const char *vkj_gfx_init(vkj_gfx *g, VkInstance inst, VkPhysicalDevice pd, VkDevice dev, int swapchain) {
	PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)vkj_gipa();
	if (gipa == NULL) {
		return "vkGetInstanceProcAddr";
	}
	PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(inst, "vkGetDeviceProcAddr");
	if (gdpa == NULL) {
		return "vkGetDeviceProcAddr";
	}
	g->inst = inst;
	g->phys = pd;
	g->dev = dev;
#define ILOAD(name)                                              \
	g->name = (PFN_vk##name)gipa(inst, "vk" #name);              \
	if (g->name == NULL) {                                       \
		return "vk" #name;                                       \
	}
#define ILOAD_OPT(name) g->name = (PFN_vk##name)gipa(inst, "vk" #name);
#define LOAD(name)                                               \
	g->name = (PFN_vk##name)gdpa(dev, "vk" #name);               \
	if (g->name == NULL) {                                       \
		return "vk" #name;                                       \
	}
	ILOAD(GetPhysicalDeviceFormatProperties)
	ILOAD_OPT(DestroySurfaceKHR)
	ILOAD_OPT(GetPhysicalDeviceSurfaceSupportKHR)
	ILOAD_OPT(GetPhysicalDeviceSurfaceCapabilitiesKHR)
	ILOAD_OPT(GetPhysicalDeviceSurfaceFormatsKHR)
	ILOAD_OPT(GetPhysicalDeviceSurfacePresentModesKHR)
	LOAD(CreateRenderPass)
	LOAD(DestroyRenderPass)
	LOAD(CreateFramebuffer)
	LOAD(DestroyFramebuffer)
	LOAD(CreateImage)
	LOAD(DestroyImage)
	LOAD(GetImageMemoryRequirements)
	LOAD(AllocateMemory)
	LOAD(FreeMemory)
	LOAD(BindImageMemory)
	LOAD(CreateImageView)
	LOAD(DestroyImageView)
	LOAD(CreateShaderModule)
	LOAD(DestroyShaderModule)
	LOAD(CreateDescriptorSetLayout)
	LOAD(DestroyDescriptorSetLayout)
	LOAD(CreateDescriptorPool)
	LOAD(DestroyDescriptorPool)
	LOAD(AllocateDescriptorSets)
	LOAD(UpdateDescriptorSets)
	LOAD(CreatePipelineLayout)
	LOAD(DestroyPipelineLayout)
	LOAD(CreateGraphicsPipelines)
	LOAD(DestroyPipeline)
	LOAD(CreateCommandPool)
	LOAD(DestroyCommandPool)
	LOAD(ResetCommandPool)
	LOAD(AllocateCommandBuffers)
	LOAD(CreateFence)
	LOAD(DestroyFence)
	LOAD(ResetFences)
	LOAD(WaitForFences)
	LOAD(CreateSemaphore)
	LOAD(DestroySemaphore)
	LOAD(BeginCommandBuffer)
	LOAD(EndCommandBuffer)
	LOAD(CmdBeginRenderPass)
	LOAD(CmdEndRenderPass)
	LOAD(CmdExecuteCommands)
	LOAD(CmdBindPipeline)
	LOAD(CmdBindDescriptorSets)
	LOAD(CmdBindVertexBuffers)
	LOAD(CmdBindIndexBuffer)
	LOAD(CmdPushConstants)
	LOAD(CmdDraw)
	LOAD(CmdDrawIndexed)
	LOAD(CmdSetViewport)
	LOAD(CmdSetScissor)
	LOAD(CmdClearAttachments)
	LOAD(CmdPipelineBarrier)
	LOAD(CmdCopyImageToBuffer)
	LOAD(QueueSubmit)
	LOAD(QueueWaitIdle)
	if (swapchain) {
		if (g->DestroySurfaceKHR == NULL || g->GetPhysicalDeviceSurfaceSupportKHR == NULL ||
			g->GetPhysicalDeviceSurfaceCapabilitiesKHR == NULL || g->GetPhysicalDeviceSurfaceFormatsKHR == NULL ||
			g->GetPhysicalDeviceSurfacePresentModesKHR == NULL) {
			return "vkGetPhysicalDeviceSurface*KHR (instance extension VK_KHR_surface)";
		}
		LOAD(CreateSwapchainKHR)
		LOAD(DestroySwapchainKHR)
		LOAD(GetSwapchainImagesKHR)
		LOAD(AcquireNextImageKHR)
		LOAD(QueuePresentKHR)
	}
#undef ILOAD
#undef ILOAD_OPT
#undef LOAD
	return NULL;
}

void vkj_gfx_destroy(const vkj_gfx *g, int kind, uint64_t h) {
	if (h == 0) {
		return;
	}
	VkDevice d = g->dev;
	switch (kind) {
	case VKJ_RENDER_PASS: g->DestroyRenderPass(d, H(VkRenderPass, h), NULL); break;
	case VKJ_FRAMEBUFFER: g->DestroyFramebuffer(d, H(VkFramebuffer, h), NULL); break;
	case VKJ_IMAGE: g->DestroyImage(d, H(VkImage, h), NULL); break;
	case VKJ_MEMORY: g->FreeMemory(d, H(VkDeviceMemory, h), NULL); break;
	case VKJ_IMAGE_VIEW: g->DestroyImageView(d, H(VkImageView, h), NULL); break;
	case VKJ_SHADER_MODULE: g->DestroyShaderModule(d, H(VkShaderModule, h), NULL); break;
	case VKJ_SET_LAYOUT: g->DestroyDescriptorSetLayout(d, H(VkDescriptorSetLayout, h), NULL); break;
	case VKJ_DESC_POOL: g->DestroyDescriptorPool(d, H(VkDescriptorPool, h), NULL); break;
	case VKJ_PIPE_LAYOUT: g->DestroyPipelineLayout(d, H(VkPipelineLayout, h), NULL); break;
	case VKJ_PIPELINE: g->DestroyPipeline(d, H(VkPipeline, h), NULL); break;
	case VKJ_COMMAND_POOL: g->DestroyCommandPool(d, H(VkCommandPool, h), NULL); break;
	case VKJ_FENCE: g->DestroyFence(d, H(VkFence, h), NULL); break;
	case VKJ_SEMAPHORE: g->DestroySemaphore(d, H(VkSemaphore, h), NULL); break;
	case VKJ_SWAPCHAIN:
		if (g->DestroySwapchainKHR != NULL) {
			g->DestroySwapchainKHR(d, H(VkSwapchainKHR, h), NULL);
		}
		break;
	case VKJ_SURFACE:
		if (g->DestroySurfaceKHR != NULL) {
			g->DestroySurfaceKHR(g->inst, H(VkSurfaceKHR, h), NULL);
		}
		break;
	}
}

uint32_t vkj_format_features(const vkj_gfx *g, uint32_t format) {
	VkFormatProperties p;
	memset(&p, 0, sizeof(p));
	g->GetPhysicalDeviceFormatProperties(g->phys, (VkFormat)format, &p);
	return p.optimalTilingFeatures;
}

VkResult vkj_render_pass(const vkj_gfx *g, uint32_t color_format, uint32_t depth_format, uint32_t final_layout, uint64_t *out) {
	VkAttachmentDescription att[2];
	memset(att, 0, sizeof(att));
	att[0].format = (VkFormat)color_format;
	att[0].samples = VK_SAMPLE_COUNT_1_BIT;
	att[0].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
	att[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
	att[0].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
	att[0].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
	att[0].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
	att[0].finalLayout = (VkImageLayout)final_layout;
	att[1].format = (VkFormat)depth_format;
	att[1].samples = VK_SAMPLE_COUNT_1_BIT;
	att[1].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
	att[1].storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
	att[1].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
	att[1].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
	att[1].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
	att[1].finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
	VkAttachmentReference color = {0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
	VkAttachmentReference depth = {1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
	VkSubpassDescription sub;
	memset(&sub, 0, sizeof(sub));
	sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
	sub.colorAttachmentCount = 1;
	sub.pColorAttachments = &color;
	sub.pDepthStencilAttachment = &depth;
	const VkPipelineStageFlags attach = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT |
		VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
	VkSubpassDependency dep[2];
	memset(dep, 0, sizeof(dep));
	// Earlier frames' attachment writes and read-back copies (and the
	// acquire semaphore's wait, at colour output) before this frame's
	// layout transitions and attachment accesses.
	dep[0].srcSubpass = VK_SUBPASS_EXTERNAL;
	dep[0].dstSubpass = 0;
	dep[0].srcStageMask = attach | VK_PIPELINE_STAGE_TRANSFER_BIT;
	dep[0].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
	dep[0].dstStageMask = attach;
	dep[0].dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT |
		VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
	// The colour writes before a read-back copy.
	dep[1].srcSubpass = 0;
	dep[1].dstSubpass = VK_SUBPASS_EXTERNAL;
	dep[1].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
	dep[1].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
	dep[1].dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
	dep[1].dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
	VkRenderPassCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO;
	ci.attachmentCount = 2;
	ci.pAttachments = att;
	ci.subpassCount = 1;
	ci.pSubpasses = &sub;
	ci.dependencyCount = 2;
	ci.pDependencies = dep;
	VkRenderPass rp = VK_NULL_HANDLE;
	VkResult r = g->CreateRenderPass(g->dev, &ci, NULL, &rp);
	*out = U64(rp);
	return r;
}

VkResult vkj_framebuffer(const vkj_gfx *g, uint64_t rp, uint64_t color_view, uint64_t depth_view, uint32_t w, uint32_t h, uint64_t *out) {
	VkImageView views[2] = {H(VkImageView, color_view), H(VkImageView, depth_view)};
	VkFramebufferCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO;
	ci.renderPass = H(VkRenderPass, rp);
	ci.attachmentCount = 2;
	ci.pAttachments = views;
	ci.width = w;
	ci.height = h;
	ci.layers = 1;
	VkFramebuffer fb = VK_NULL_HANDLE;
	VkResult r = g->CreateFramebuffer(g->dev, &ci, NULL, &fb);
	*out = U64(fb);
	return r;
}

VkResult vkj_image(const vkj_gfx *g, uint32_t format, uint32_t w, uint32_t h, uint32_t usage,
	uint64_t *image, uint64_t *size, uint32_t *type_bits) {
	VkImageCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO;
	ci.imageType = VK_IMAGE_TYPE_2D;
	ci.format = (VkFormat)format;
	ci.extent.width = w;
	ci.extent.height = h;
	ci.extent.depth = 1;
	ci.mipLevels = 1;
	ci.arrayLayers = 1;
	ci.samples = VK_SAMPLE_COUNT_1_BIT;
	ci.tiling = VK_IMAGE_TILING_OPTIMAL;
	ci.usage = usage;
	ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
	ci.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
	VkImage img = VK_NULL_HANDLE;
	VkResult r = g->CreateImage(g->dev, &ci, NULL, &img);
	*image = U64(img);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkMemoryRequirements req;
	g->GetImageMemoryRequirements(g->dev, img, &req);
	*size = req.size;
	*type_bits = req.memoryTypeBits;
	return VK_SUCCESS;
}

VkResult vkj_image_bind(const vkj_gfx *g, uint64_t image, uint64_t size, uint32_t mem_type, uint64_t *mem) {
	VkMemoryAllocateInfo ai;
	memset(&ai, 0, sizeof(ai));
	ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
	ai.allocationSize = size;
	ai.memoryTypeIndex = mem_type;
	VkDeviceMemory m = VK_NULL_HANDLE;
	VkResult r = g->AllocateMemory(g->dev, &ai, NULL, &m);
	*mem = U64(m);
	if (r != VK_SUCCESS) {
		return r;
	}
	return g->BindImageMemory(g->dev, H(VkImage, image), m, 0);
}

VkResult vkj_image_view(const vkj_gfx *g, uint64_t image, uint32_t format, uint32_t aspect, uint64_t *out) {
	VkImageViewCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO;
	ci.image = H(VkImage, image);
	ci.viewType = VK_IMAGE_VIEW_TYPE_2D;
	ci.format = (VkFormat)format;
	ci.subresourceRange.aspectMask = aspect;
	ci.subresourceRange.levelCount = 1;
	ci.subresourceRange.layerCount = 1;
	VkImageView v = VK_NULL_HANDLE;
	VkResult r = g->CreateImageView(g->dev, &ci, NULL, &v);
	*out = U64(v);
	return r;
}

VkResult vkj_shader_module(const vkj_gfx *g, const uint32_t *code, size_t size, uint64_t *out) {
	return vkj_make_shader_module(g->CreateShaderModule, g->dev, code, size, out);
}

VkResult vkj_frame_layouts(const vkj_gfx *g, uint32_t pc_size, uint32_t sets,
	uint64_t *set_layout, uint64_t *pipe_layout, uint64_t *pool) {
	*set_layout = 0;
	*pipe_layout = 0;
	*pool = 0;
	VkDescriptorSetLayoutBinding b;
	memset(&b, 0, sizeof(b));
	b.binding = 0;
	b.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
	b.descriptorCount = 1;
	b.stageFlags = VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT;
	VkDescriptorSetLayoutCreateInfo lci;
	memset(&lci, 0, sizeof(lci));
	lci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
	lci.bindingCount = 1;
	lci.pBindings = &b;
	VkDescriptorSetLayout sl = VK_NULL_HANDLE;
	VkResult r = g->CreateDescriptorSetLayout(g->dev, &lci, NULL, &sl);
	if (r != VK_SUCCESS) {
		return r;
	}
	*set_layout = U64(sl);
	VkPushConstantRange pcr;
	pcr.stageFlags = VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT;
	pcr.offset = 0;
	pcr.size = pc_size;
	VkPipelineLayoutCreateInfo pci;
	memset(&pci, 0, sizeof(pci));
	pci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
	pci.setLayoutCount = 1;
	pci.pSetLayouts = &sl;
	pci.pushConstantRangeCount = 1;
	pci.pPushConstantRanges = &pcr;
	VkPipelineLayout pl = VK_NULL_HANDLE;
	r = g->CreatePipelineLayout(g->dev, &pci, NULL, &pl);
	if (r != VK_SUCCESS) {
		return r;
	}
	*pipe_layout = U64(pl);
	VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, sets};
	VkDescriptorPoolCreateInfo dci;
	memset(&dci, 0, sizeof(dci));
	dci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
	dci.maxSets = sets;
	dci.poolSizeCount = 1;
	dci.pPoolSizes = &ps;
	VkDescriptorPool dp = VK_NULL_HANDLE;
	r = g->CreateDescriptorPool(g->dev, &dci, NULL, &dp);
	*pool = U64(dp);
	return r;
}

VkResult vkj_frame_set(const vkj_gfx *g, uint64_t pool, uint64_t set_layout, uint64_t buffer, uint64_t range, uint64_t *out) {
	VkDescriptorSetLayout l = H(VkDescriptorSetLayout, set_layout);
	VkDescriptorSetAllocateInfo ai;
	memset(&ai, 0, sizeof(ai));
	ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
	ai.descriptorPool = H(VkDescriptorPool, pool);
	ai.descriptorSetCount = 1;
	ai.pSetLayouts = &l;
	VkDescriptorSet set = VK_NULL_HANDLE;
	VkResult r = g->AllocateDescriptorSets(g->dev, &ai, &set);
	*out = U64(set);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkDescriptorBufferInfo bi;
	bi.buffer = H(VkBuffer, buffer);
	bi.offset = 0;
	bi.range = range;
	VkWriteDescriptorSet w;
	memset(&w, 0, sizeof(w));
	w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
	w.dstSet = set;
	w.dstBinding = 0;
	w.descriptorCount = 1;
	w.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
	w.pBufferInfo = &bi;
	g->UpdateDescriptorSets(g->dev, 1, &w, 0, NULL);
	return VK_SUCCESS;
}

VkResult vkj_graphics_pipeline(const vkj_gfx *g, uint64_t cache, const vkj_pipe_desc *d, uint64_t *out) {
	VkPipelineShaderStageCreateInfo stages[2];
	memset(stages, 0, sizeof(stages));
	stages[0].sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
	stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
	stages[0].module = H(VkShaderModule, d->vert);
	stages[0].pName = "main";
	stages[1].sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
	stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
	stages[1].module = H(VkShaderModule, d->frag);
	stages[1].pName = "main";

	VkVertexInputBindingDescription binds[2] = {
		{0, 24, VK_VERTEX_INPUT_RATE_VERTEX},
		{1, 32, VK_VERTEX_INPUT_RATE_INSTANCE},
	};
	VkVertexInputAttributeDescription attrs[4] = {
		{0, 0, VK_FORMAT_R32G32B32_SFLOAT, 0},
		{1, 0, VK_FORMAT_R32G32B32_SFLOAT, 12},
		{2, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 0},
		{3, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 16},
	};
	VkPipelineVertexInputStateCreateInfo vi;
	memset(&vi, 0, sizeof(vi));
	vi.sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO;
	vi.vertexBindingDescriptionCount = d->instanced ? 2 : 1;
	vi.pVertexBindingDescriptions = binds;
	vi.vertexAttributeDescriptionCount = d->instanced ? 4 : 2;
	vi.pVertexAttributeDescriptions = attrs;

	VkPipelineInputAssemblyStateCreateInfo ia;
	memset(&ia, 0, sizeof(ia));
	ia.sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO;
	ia.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;

	VkPipelineViewportStateCreateInfo vp;
	memset(&vp, 0, sizeof(vp));
	vp.sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO;
	vp.viewportCount = 1;
	vp.scissorCount = 1;

	VkPipelineRasterizationStateCreateInfo rs;
	memset(&rs, 0, sizeof(rs));
	rs.sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO;
	rs.polygonMode = VK_POLYGON_MODE_FILL;
	rs.cullMode = d->cull;
	rs.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
	rs.lineWidth = 1.0f;

	VkPipelineMultisampleStateCreateInfo ms;
	memset(&ms, 0, sizeof(ms));
	ms.sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO;
	ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;

	VkPipelineDepthStencilStateCreateInfo ds;
	memset(&ds, 0, sizeof(ds));
	ds.sType = VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO;
	ds.depthTestEnable = d->depth_test ? VK_TRUE : VK_FALSE;
	ds.depthWriteEnable = (d->depth_test && !d->blend) ? VK_TRUE : VK_FALSE;
	ds.depthCompareOp = VK_COMPARE_OP_LESS_OR_EQUAL;

	VkPipelineColorBlendAttachmentState cba;
	memset(&cba, 0, sizeof(cba));
	cba.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT;
	if (d->blend) {
		cba.blendEnable = VK_TRUE;
		cba.srcColorBlendFactor = VK_BLEND_FACTOR_SRC_ALPHA;
		cba.dstColorBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
		cba.colorBlendOp = VK_BLEND_OP_ADD;
		cba.srcAlphaBlendFactor = VK_BLEND_FACTOR_ONE;
		cba.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
		cba.alphaBlendOp = VK_BLEND_OP_ADD;
	}
	VkPipelineColorBlendStateCreateInfo cb;
	memset(&cb, 0, sizeof(cb));
	cb.sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO;
	cb.attachmentCount = 1;
	cb.pAttachments = &cba;

	VkDynamicState dyn[2] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
	VkPipelineDynamicStateCreateInfo dy;
	memset(&dy, 0, sizeof(dy));
	dy.sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO;
	dy.dynamicStateCount = 2;
	dy.pDynamicStates = dyn;

	VkGraphicsPipelineCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO;
	ci.stageCount = 2;
	ci.pStages = stages;
	ci.pVertexInputState = &vi;
	ci.pInputAssemblyState = &ia;
	ci.pViewportState = &vp;
	ci.pRasterizationState = &rs;
	ci.pMultisampleState = &ms;
	ci.pDepthStencilState = &ds;
	ci.pColorBlendState = &cb;
	ci.pDynamicState = &dy;
	ci.layout = H(VkPipelineLayout, d->layout);
	ci.renderPass = H(VkRenderPass, d->render_pass);
	ci.subpass = 0;
	ci.basePipelineIndex = -1;
	VkPipeline p = VK_NULL_HANDLE;
	VkResult r = g->CreateGraphicsPipelines(g->dev, H(VkPipelineCache, cache), 1, &ci, NULL, &p);
	*out = U64(p);
	return r;
}

VkResult vkj_fence(const vkj_gfx *g, int signaled, uint64_t *out) {
	return vkj_make_fence(g->CreateFence, g->dev, signaled, out);
}

VkResult vkj_semaphore(const vkj_gfx *g, uint64_t *out) {
	VkSemaphoreCreateInfo ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
	VkSemaphore s = VK_NULL_HANDLE;
	VkResult r = g->CreateSemaphore(g->dev, &ci, NULL, &s);
	*out = U64(s);
	return r;
}

VkResult vkj_command_pool(const vkj_gfx *g, uint32_t qfam, uint64_t *out) {
	return vkj_make_command_pool(g->CreateCommandPool, g->dev, qfam, VK_COMMAND_POOL_CREATE_TRANSIENT_BIT, out);
}

VkResult vkj_alloc_cbs(const vkj_gfx *g, uint64_t pool, int secondary, uint32_t n, VkCommandBuffer *out) {
	VkCommandBufferAllocateInfo ai;
	memset(&ai, 0, sizeof(ai));
	ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
	ai.commandPool = H(VkCommandPool, pool);
	ai.level = secondary ? VK_COMMAND_BUFFER_LEVEL_SECONDARY : VK_COMMAND_BUFFER_LEVEL_PRIMARY;
	ai.commandBufferCount = n;
	return g->AllocateCommandBuffers(g->dev, &ai, out);
}

VkResult vkj_wait_fence(const vkj_gfx *g, uint64_t fence, uint64_t timeout_ns) {
	VkFence f = H(VkFence, fence);
	return g->WaitForFences(g->dev, 1, &f, VK_TRUE, timeout_ns);
}

VkResult vkj_reset_pool(const vkj_gfx *g, uint64_t pool) {
	return g->ResetCommandPool(g->dev, H(VkCommandPool, pool), 0);
}

VkResult vkj_frame_begin(const vkj_gfx *g, uint64_t fence, int wait, uint64_t timeout_ns, const uint64_t *pools, uint32_t n) {
	if (wait) {
		VkResult r = vkj_wait_fence(g, fence, timeout_ns);
		if (r != VK_SUCCESS) {
			return r;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (pools[i] == 0) {
			continue;
		}
		VkResult r = g->ResetCommandPool(g->dev, H(VkCommandPool, pools[i]), 0);
		if (r != VK_SUCCESS) {
			return r;
		}
	}
	return VK_SUCCESS;
}

VkResult vkj_secondary_begin(const vkj_gfx *g, VkCommandBuffer cb, uint64_t rp, uint64_t fb,
	uint32_t w, uint32_t h, uint64_t layout, uint64_t set) {
	VkCommandBufferInheritanceInfo inh;
	memset(&inh, 0, sizeof(inh));
	inh.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO;
	inh.renderPass = H(VkRenderPass, rp);
	inh.subpass = 0;
	inh.framebuffer = H(VkFramebuffer, fb);
	VkCommandBufferBeginInfo bi;
	memset(&bi, 0, sizeof(bi));
	bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
	bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT | VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT;
	bi.pInheritanceInfo = &inh;
	VkResult r = g->BeginCommandBuffer(cb, &bi);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkDescriptorSet s = H(VkDescriptorSet, set);
	g->CmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, H(VkPipelineLayout, layout), 0, 1, &s, 0, NULL);
	VkViewport v = {0, 0, (float)w, (float)h, 0, 1};
	g->CmdSetViewport(cb, 0, 1, &v);
	VkRect2D sc = {{0, 0}, {w, h}};
	g->CmdSetScissor(cb, 0, 1, &sc);
	return VK_SUCCESS;
}

VkResult vkj_cb_end(const vkj_gfx *g, VkCommandBuffer cb) { return g->EndCommandBuffer(cb); }

void vkj_bind_pipeline(const vkj_gfx *g, VkCommandBuffer cb, uint64_t pipe) {
	g->CmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, H(VkPipeline, pipe));
}

void vkj_bind_mesh(const vkj_gfx *g, VkCommandBuffer cb, uint64_t vbuf, uint64_t voff,
	uint64_t ibuf, uint64_t ioff, uint32_t index_type, uint64_t inst, uint64_t inst_off) {
	VkBuffer bufs[2] = {H(VkBuffer, vbuf), H(VkBuffer, inst)};
	VkDeviceSize offs[2] = {voff, inst_off};
	g->CmdBindVertexBuffers(cb, 0, inst != 0 ? 2 : 1, bufs, offs);
	if (index_type != 0) {
		g->CmdBindIndexBuffer(cb, H(VkBuffer, ibuf), ioff, index_type == 1 ? VK_INDEX_TYPE_UINT16 : VK_INDEX_TYPE_UINT32);
	}
}

void vkj_state(const vkj_gfx *g, VkCommandBuffer cb, uint32_t kind, float x, float y, float w, float h) {
	if (kind == 0) {
		VkViewport v = {x, y, w, h, 0, 1};
		g->CmdSetViewport(cb, 0, 1, &v);
	} else {
		VkRect2D r = {{(int32_t)x, (int32_t)y}, {(uint32_t)w, (uint32_t)h}};
		g->CmdSetScissor(cb, 0, 1, &r);
	}
}

void vkj_draw(const vkj_gfx *g, VkCommandBuffer cb, uint64_t layout, const uint8_t *pc, uint32_t pc_size,
	int indexed, uint32_t count, uint32_t instances, uint32_t first, uint32_t first_instance) {
	g->CmdPushConstants(cb, H(VkPipelineLayout, layout), VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT,
		0, pc_size, pc);
	if (indexed) {
		g->CmdDrawIndexed(cb, count, instances, first, 0, first_instance);
	} else {
		g->CmdDraw(cb, count, instances, first, first_instance);
	}
}

void vkj_clear(const vkj_gfx *g, VkCommandBuffer cb, uint32_t flags, const float *rgba, float depth, uint32_t w, uint32_t h) {
	VkClearAttachment a[2];
	memset(a, 0, sizeof(a));
	uint32_t n = 0;
	if (flags & 1) {
		a[n].aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
		a[n].colorAttachment = 0;
		memcpy(a[n].clearValue.color.float32, rgba, 4 * sizeof(float));
		n++;
	}
	if (flags & 2) {
		a[n].aspectMask = VK_IMAGE_ASPECT_DEPTH_BIT;
		a[n].clearValue.depthStencil.depth = depth;
		n++;
	}
	if (n == 0) {
		return;
	}
	VkClearRect r;
	memset(&r, 0, sizeof(r));
	r.rect.extent.width = w;
	r.rect.extent.height = h;
	r.layerCount = 1;
	g->CmdClearAttachments(cb, n, a, 1, &r);
}

static void barrier(const vkj_gfx *g, VkCommandBuffer cb, VkPipelineStageFlags src, VkPipelineStageFlags dst,
	VkAccessFlags src_access, VkAccessFlags dst_access) {
	VkMemoryBarrier mb;
	memset(&mb, 0, sizeof(mb));
	mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
	mb.srcAccessMask = src_access;
	mb.dstAccessMask = dst_access;
	g->CmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

VkResult vkj_frame_record(const vkj_gfx *g, VkCommandBuffer cb, uint64_t rp, uint64_t fb, uint32_t w, uint32_t h,
	const float *clear, const VkCommandBuffer *secs, uint32_t nsec, uint64_t copy_image, uint64_t copy_buf) {
	VkCommandBufferBeginInfo bi;
	memset(&bi, 0, sizeof(bi));
	bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
	bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
	VkResult r = g->BeginCommandBuffer(cb, &bi);
	if (r != VK_SUCCESS) {
		return r;
	}
	// Vertex, index and uniform data written by compute kernels (the
	// skinning kernel's output bound as a vertex buffer), copies or the
	// host, earlier on this queue.
	barrier(g, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
		VK_PIPELINE_STAGE_VERTEX_INPUT_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
		VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
		VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT | VK_ACCESS_INDEX_READ_BIT | VK_ACCESS_UNIFORM_READ_BIT | VK_ACCESS_SHADER_READ_BIT);
	VkClearValue cv[2];
	memset(cv, 0, sizeof(cv));
	memcpy(cv[0].color.float32, clear, 4 * sizeof(float));
	cv[1].depthStencil.depth = 1.0f;
	VkRenderPassBeginInfo rb;
	memset(&rb, 0, sizeof(rb));
	rb.sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO;
	rb.renderPass = H(VkRenderPass, rp);
	rb.framebuffer = H(VkFramebuffer, fb);
	rb.renderArea.extent.width = w;
	rb.renderArea.extent.height = h;
	rb.clearValueCount = 2;
	rb.pClearValues = cv;
	g->CmdBeginRenderPass(cb, &rb, VK_SUBPASS_CONTENTS_SECONDARY_COMMAND_BUFFERS);
	if (nsec > 0) {
		g->CmdExecuteCommands(cb, nsec, secs);
	}
	g->CmdEndRenderPass(cb);
	if (copy_image != 0) {
		VkBufferImageCopy c;
		memset(&c, 0, sizeof(c));
		c.imageSubresource.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
		c.imageSubresource.layerCount = 1;
		c.imageExtent.width = w;
		c.imageExtent.height = h;
		c.imageExtent.depth = 1;
		g->CmdCopyImageToBuffer(cb, H(VkImage, copy_image), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, H(VkBuffer, copy_buf), 1, &c);
		barrier(g, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
	}
	// Later compute and copies (next frame's skinning writing the vertex
	// buffers this frame reads) wait for this frame's reads.
	barrier(g, cb, VK_PIPELINE_STAGE_VERTEX_INPUT_BIT | VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0);
	return g->EndCommandBuffer(cb);
}

VkResult vkj_frame_submit(const vkj_gfx *g, VkQueue q, VkCommandBuffer cb, uint64_t wait_sem, uint64_t signal_sem, uint64_t fence) {
	VkFence f = H(VkFence, fence);
	VkResult r = g->ResetFences(g->dev, 1, &f);
	if (r != VK_SUCCESS) {
		return r;
	}
	VkSemaphore ws = H(VkSemaphore, wait_sem);
	VkSemaphore ss = H(VkSemaphore, signal_sem);
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
	VkSubmitInfo si;
	memset(&si, 0, sizeof(si));
	si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
	if (wait_sem != 0) {
		si.waitSemaphoreCount = 1;
		si.pWaitSemaphores = &ws;
		si.pWaitDstStageMask = &stage;
	}
	si.commandBufferCount = 1;
	si.pCommandBuffers = &cb;
	if (signal_sem != 0) {
		si.signalSemaphoreCount = 1;
		si.pSignalSemaphores = &ss;
	}
	return g->QueueSubmit(q, 1, &si, f);
}

int vkj_surface_support(const vkj_gfx *g, uint32_t qfam, uint64_t surface) {
	VkBool32 ok = VK_FALSE;
	if (g->GetPhysicalDeviceSurfaceSupportKHR(g->phys, qfam, H(VkSurfaceKHR, surface), &ok) != VK_SUCCESS) {
		return 0;
	}
	return ok == VK_TRUE;
}

VkResult vkj_surface_caps_get(const vkj_gfx *g, uint64_t surface, vkj_surface_caps *out) {
	VkSurfaceCapabilitiesKHR c;
	memset(&c, 0, sizeof(c));
	VkResult r = g->GetPhysicalDeviceSurfaceCapabilitiesKHR(g->phys, H(VkSurfaceKHR, surface), &c);
	out->min_images = c.minImageCount;
	out->max_images = c.maxImageCount;
	out->cur_w = c.currentExtent.width;
	out->cur_h = c.currentExtent.height;
	out->min_w = c.minImageExtent.width;
	out->min_h = c.minImageExtent.height;
	out->max_w = c.maxImageExtent.width;
	out->max_h = c.maxImageExtent.height;
	out->transforms = c.supportedTransforms;
	out->cur_transform = c.currentTransform;
	out->alpha = c.supportedCompositeAlpha;
	out->usage = c.supportedUsageFlags;
	return r;
}

uint32_t vkj_surface_formats(const vkj_gfx *g, uint64_t surface, uint32_t *formats, uint32_t *spaces, uint32_t max) {
	VkSurfaceFormatKHR f[64];
	uint32_t n = 64;
	VkResult r = g->GetPhysicalDeviceSurfaceFormatsKHR(g->phys, H(VkSurfaceKHR, surface), &n, f);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		return 0;
	}
	if (n > max) {
		n = max;
	}
	for (uint32_t i = 0; i < n; i++) {
		formats[i] = f[i].format;
		spaces[i] = f[i].colorSpace;
	}
	return n;
}

uint32_t vkj_present_modes(const vkj_gfx *g, uint64_t surface, uint32_t *modes, uint32_t max) {
	VkPresentModeKHR m[16];
	uint32_t n = 16;
	VkResult r = g->GetPhysicalDeviceSurfacePresentModesKHR(g->phys, H(VkSurfaceKHR, surface), &n, m);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		return 0;
	}
	if (n > max) {
		n = max;
	}
	for (uint32_t i = 0; i < n; i++) {
		modes[i] = m[i];
	}
	return n;
}

VkResult vkj_swapchain(const vkj_gfx *g, uint64_t surface, uint64_t old, uint32_t images, uint32_t format, uint32_t space,
	uint32_t w, uint32_t h, uint32_t transform, uint32_t alpha, uint32_t mode, uint64_t *out) {
	VkSwapchainCreateInfoKHR ci;
	memset(&ci, 0, sizeof(ci));
	ci.sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR;
	ci.surface = H(VkSurfaceKHR, surface);
	ci.minImageCount = images;
	ci.imageFormat = (VkFormat)format;
	ci.imageColorSpace = (VkColorSpaceKHR)space;
	ci.imageExtent.width = w;
	ci.imageExtent.height = h;
	ci.imageArrayLayers = 1;
	ci.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT;
	ci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
	ci.preTransform = (VkSurfaceTransformFlagBitsKHR)transform;
	ci.compositeAlpha = (VkCompositeAlphaFlagBitsKHR)alpha;
	ci.presentMode = (VkPresentModeKHR)mode;
	ci.clipped = VK_TRUE;
	ci.oldSwapchain = H(VkSwapchainKHR, old);
	VkSwapchainKHR sc = VK_NULL_HANDLE;
	VkResult r = g->CreateSwapchainKHR(g->dev, &ci, NULL, &sc);
	*out = U64(sc);
	return r;
}

// vkj_swapchain_images sets *n to the swapchain's image count and writes
// the images when there are at most max (64) of them.
VkResult vkj_swapchain_images(const vkj_gfx *g, uint64_t sc, uint64_t *out, uint32_t max, uint32_t *n) {
	VkImage imgs[64];
	uint32_t k = 0;
	VkResult r = g->GetSwapchainImagesKHR(g->dev, H(VkSwapchainKHR, sc), &k, NULL);
	*n = k;
	if (r != VK_SUCCESS || k > max || k > 64) {
		return r;
	}
	r = g->GetSwapchainImagesKHR(g->dev, H(VkSwapchainKHR, sc), &k, imgs);
	if (r != VK_SUCCESS) {
		*n = 0;
		return r;
	}
	*n = k;
	for (uint32_t i = 0; i < k; i++) {
		out[i] = U64(imgs[i]);
	}
	return VK_SUCCESS;
}

VkResult vkj_acquire(const vkj_gfx *g, uint64_t sc, uint64_t timeout_ns, uint64_t sem, uint32_t *index) {
	return g->AcquireNextImageKHR(g->dev, H(VkSwapchainKHR, sc), timeout_ns, H(VkSemaphore, sem), VK_NULL_HANDLE, index);
}

VkResult vkj_present(const vkj_gfx *g, VkQueue q, uint64_t sc, uint32_t index, uint64_t wait_sem) {
	VkSwapchainKHR s = H(VkSwapchainKHR, sc);
	VkSemaphore ws = H(VkSemaphore, wait_sem);
	VkPresentInfoKHR pi;
	memset(&pi, 0, sizeof(pi));
	pi.sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR;
	pi.waitSemaphoreCount = 1;
	pi.pWaitSemaphores = &ws;
	pi.swapchainCount = 1;
	pi.pSwapchains = &s;
	pi.pImageIndices = &index;
	return g->QueuePresentKHR(q, &pi);
}

VkResult vkj_queue_wait_idle(const vkj_gfx *g, VkQueue q) { return g->QueueWaitIdle(q); }
