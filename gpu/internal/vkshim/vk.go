package vkshim

// The Vulkan handle types and the constants the backends use. Callers
// import the package as vk ("vk.Buffer", "vk.PipelineStageTransferBit").
//
// Every constant takes its value from the Vulkan headers (vulkan_core.h)
// through cgo, so none can drift from the specification.

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Dispatchable handles are pointers to the loader's or driver's objects;
// they are held as uintptr (C memory, never Go memory, so the garbage
// collector need not see them) and 0 is VK_NULL_HANDLE.
type (
	Instance       uintptr
	PhysicalDevice uintptr
	Device         uintptr
	Queue          uintptr
	CommandBuffer  uintptr
)

// Non-dispatchable handles are 64-bit on every platform (VK_DEFINE_NON_
// DISPATCHABLE_HANDLE is a pointer only on 64-bit ones, of the same
// size); 0 is VK_NULL_HANDLE.
type (
	Buffer              uint64
	DeviceMemory        uint64
	Fence               uint64
	Event               uint64
	CommandPool         uint64
	DescriptorPool      uint64
	DescriptorSetLayout uint64
	PipelineLayout      uint64
	Pipeline            uint64
	PipelineCache       uint64
	ShaderModule        uint64
	QueryPool           uint64
)

// Pointer returns the instance as the C pointer it is, for a window
// system's surface creation (glfwCreateWindowSurface).
func (i Instance) Pointer() unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&i)) }

// The conversions to the C handle types reinterpret the bits (a uintptr
// and a C pointer have the same size): no allocation, no vet warning of a
// uintptr turned into a pointer.
func cInstance(i Instance) C.VkInstance         { return *(*C.VkInstance)(unsafe.Pointer(&i)) }
func cPhys(p PhysicalDevice) C.VkPhysicalDevice { return *(*C.VkPhysicalDevice)(unsafe.Pointer(&p)) }
func cDevice(d Device) C.VkDevice               { return *(*C.VkDevice)(unsafe.Pointer(&d)) }
func cQueue(q Queue) C.VkQueue                  { return *(*C.VkQueue)(unsafe.Pointer(&q)) }
func cmdBuf(cb CommandBuffer) C.VkCommandBuffer {
	return *(*C.VkCommandBuffer)(unsafe.Pointer(&cb))
}

// Flag and enum types (the Vk*Flags and Vk* enums, as uint32).
type (
	MemoryPropertyFlags uint32
	BufferUsageFlags    uint32
	PipelineStageFlags  uint32
	AccessFlags         uint32
	ShaderStageFlags    uint32
	DescriptorType      uint32
	QueueFlags          uint32
	Format              uint32
	PresentMode         uint32
)

// VkMemoryPropertyFlagBits.
const (
	MemoryPropertyDeviceLocalBit  MemoryPropertyFlags = C.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
	MemoryPropertyHostVisibleBit  MemoryPropertyFlags = C.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
	MemoryPropertyHostCoherentBit MemoryPropertyFlags = C.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
	MemoryPropertyHostCachedBit   MemoryPropertyFlags = C.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
)

// VkBufferUsageFlagBits.
const (
	BufferUsageTransferSrcBit   BufferUsageFlags = C.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
	BufferUsageTransferDstBit   BufferUsageFlags = C.VK_BUFFER_USAGE_TRANSFER_DST_BIT
	BufferUsageUniformBufferBit BufferUsageFlags = C.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
	BufferUsageStorageBufferBit BufferUsageFlags = C.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
	BufferUsageIndexBufferBit   BufferUsageFlags = C.VK_BUFFER_USAGE_INDEX_BUFFER_BIT
	BufferUsageVertexBufferBit  BufferUsageFlags = C.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
)

// VkPipelineStageFlagBits.
const (
	PipelineStageTopOfPipeBit     PipelineStageFlags = C.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
	PipelineStageComputeShaderBit PipelineStageFlags = C.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
	PipelineStageTransferBit      PipelineStageFlags = C.VK_PIPELINE_STAGE_TRANSFER_BIT
	PipelineStageBottomOfPipeBit  PipelineStageFlags = C.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT
	PipelineStageHostBit          PipelineStageFlags = C.VK_PIPELINE_STAGE_HOST_BIT
	PipelineStageAllCommandsBit   PipelineStageFlags = C.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
)

// VkAccessFlagBits.
const (
	AccessUniformReadBit   AccessFlags = C.VK_ACCESS_UNIFORM_READ_BIT
	AccessShaderReadBit    AccessFlags = C.VK_ACCESS_SHADER_READ_BIT
	AccessShaderWriteBit   AccessFlags = C.VK_ACCESS_SHADER_WRITE_BIT
	AccessTransferReadBit  AccessFlags = C.VK_ACCESS_TRANSFER_READ_BIT
	AccessTransferWriteBit AccessFlags = C.VK_ACCESS_TRANSFER_WRITE_BIT
	AccessHostReadBit      AccessFlags = C.VK_ACCESS_HOST_READ_BIT
	AccessHostWriteBit     AccessFlags = C.VK_ACCESS_HOST_WRITE_BIT
)

// VkShaderStageFlagBits, VkDescriptorType, VkQueueFlagBits.
const (
	ShaderStageComputeBit ShaderStageFlags = C.VK_SHADER_STAGE_COMPUTE_BIT

	DescriptorTypeUniformBuffer DescriptorType = C.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
	DescriptorTypeStorageBuffer DescriptorType = C.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER

	QueueGraphicsBit QueueFlags = C.VK_QUEUE_GRAPHICS_BIT
	QueueComputeBit  QueueFlags = C.VK_QUEUE_COMPUTE_BIT
)

// VkCommandPoolCreateFlagBits, VkInstanceCreateFlagBits.
const (
	CommandPoolCreateTransientBit = C.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT
	// InstanceCreateEnumeratePortabilityBit is
	// VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR.
	InstanceCreateEnumeratePortabilityBit = C.VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
)

// Graphics: VkFormat, VkFormatFeatureFlagBits, VkImageLayout,
// VkImageAspectFlagBits, VkImageUsageFlagBits, VkCullModeFlagBits,
// VkColorSpaceKHR, VkPresentModeKHR, VkCompositeAlphaFlagBitsKHR.
const (
	FormatUndefined       Format = C.VK_FORMAT_UNDEFINED
	FormatR8g8b8a8Unorm   Format = C.VK_FORMAT_R8G8B8A8_UNORM
	FormatB8g8r8a8Unorm   Format = C.VK_FORMAT_B8G8R8A8_UNORM
	FormatD16Unorm        Format = C.VK_FORMAT_D16_UNORM
	FormatD32Sfloat       Format = C.VK_FORMAT_D32_SFLOAT
	FormatD24UnormS8Uint  Format = C.VK_FORMAT_D24_UNORM_S8_UINT
	FormatD32SfloatS8Uint Format = C.VK_FORMAT_D32_SFLOAT_S8_UINT

	FormatFeatureDepthStencilAttachmentBit = C.VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT

	ImageLayoutTransferSrcOptimal = C.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
	ImageLayoutPresentSrc         = C.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR

	ImageAspectColorBit   = C.VK_IMAGE_ASPECT_COLOR_BIT
	ImageAspectDepthBit   = C.VK_IMAGE_ASPECT_DEPTH_BIT
	ImageAspectStencilBit = C.VK_IMAGE_ASPECT_STENCIL_BIT

	ImageUsageTransferSrcBit            = C.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
	ImageUsageColorAttachmentBit        = C.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT
	ImageUsageDepthStencilAttachmentBit = C.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT

	CullModeNone     = C.VK_CULL_MODE_NONE
	CullModeFrontBit = C.VK_CULL_MODE_FRONT_BIT
	CullModeBackBit  = C.VK_CULL_MODE_BACK_BIT

	ColorSpaceSrgbNonlinear = C.VK_COLOR_SPACE_SRGB_NONLINEAR_KHR

	PresentModeImmediate PresentMode = C.VK_PRESENT_MODE_IMMEDIATE_KHR
	PresentModeMailbox   PresentMode = C.VK_PRESENT_MODE_MAILBOX_KHR
	PresentModeFifo      PresentMode = C.VK_PRESENT_MODE_FIFO_KHR

	CompositeAlphaOpaqueBit = C.VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR
)

// MakeVersion is VK_MAKE_API_VERSION(0, major, minor, patch).
func MakeVersion(major, minor, patch uint32) uint32 { return major<<22 | minor<<12 | patch }

// VersionString formats a Vulkan version number as "major.minor.patch".
func VersionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v>>22, v>>12&0x3ff, v&0xfff)
}
