// Package devhook is the narrow door through which package gpu/gfx (the
// graphics backend) reaches the parts of a gpu.Device that are not public
// API: Vulkan handles, the queue's lock, staging memory, buffer reference
// counts, fault injection and device loss.
//
// Package gpu cannot import gpu/gfx (that would link the renderer into
// every compute user) and gpu/gfx cannot see gpu's unexported fields, so
// gpu registers two functions here in its init (DeviceOf, BufferOf), and
// gfx calls them with a *gpu.Device or *gpu.Buffer. Being internal, this
// package is importable only under gpu/: nothing here is public API.
//
// Rejected alternatives: exported accessors on gpu.Device (Vulkan handles
// and lock pointers in the public API, for one in-module user), and
// keeping graphics inside package gpu (every compute user linked render).
package devhook

import (
	"sync"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

// Handles are a device's Vulkan objects. They are valid until
// Device.Closed reports true.
type Handles struct {
	Instance      vk.Instance
	Physical      vk.PhysicalDevice
	Device        vk.Device
	Queue         vk.Queue
	QueueFamily   uint32
	PipelineCache vk.PipelineCache
}

// Block is host-visible memory bound to a buffer (package gpu's staging
// kind), for uniforms and read-back. The zero Block is empty; Impl belongs
// to package gpu.
type Block struct {
	Buf    vk.Buffer
	Mapped []byte
	Impl   any
}

// Device is what package gfx needs from a *gpu.Device.
type Device interface {
	Handles() Handles
	// QueueLock is the external synchronisation of the queue: hold it
	// around every vkQueueSubmit, vkQueuePresentKHR and vkQueueWaitIdle.
	QueueLock() *sync.Mutex
	// Usable returns an error wrapping gpu.ErrClosed after Close began,
	// the loss after a device loss, else nil.
	Usable() error
	// Closed reports whether Close began or finished (the handles are or
	// soon will be invalid).
	Closed() bool
	// MarkLost records a device loss (err names the failed call).
	MarkLost(err error)
	// DeviceExtensions are the extensions the device was opened with.
	DeviceExtensions() []string
	// MaxPushConstants is the device's maxPushConstantsSize.
	MaxPushConstants() uint32
	// MaxViewport is the device's maxViewportDimensions.
	MaxViewport() [2]uint32
	// FindMemType returns a memory type allowed by bits with all of want,
	// preferring one that also has prefer.
	FindMemType(bits uint32, want, prefer vk.MemoryPropertyFlags) (int, bool)
	// NewStagingBlock allocates size bytes of host-visible memory bound to
	// a buffer (transfer source and destination, uniform).
	NewStagingBlock(size uint64) (Block, error)
	// FreeBlock frees b (nothing for the zero Block) and zeroes it.
	FreeBlock(b *Block)
	// TakeSubmitFault consumes one injected submit fault (gpu.FaultSubmitDeviceLost).
	TakeSubmitFault() bool
	// OnClose registers f under key: the device's Close calls it after
	// its executors closed and before it frees anything, so that an
	// object built on the device (a Graphics) frees its Vulkan objects
	// while the handles are valid; Close reports f's error. A nil f
	// removes key's registration. It fails (as Usable) once Close began.
	OnClose(key any, f func() error) error
}

// Buffer is what package gfx needs from a *gpu.Buffer.
type Buffer interface {
	// Handle is the VkBuffer.
	Handle() vk.Buffer
	// Acquire takes a reference that keeps the buffer alive past its
	// Close; false if it is already closed.
	Acquire() bool
	// Release drops a reference taken by Acquire.
	Release()
	// Closed reports whether Close was called or the memory is freed.
	Closed() bool
}

// DeviceOf and BufferOf are set by package gpu's init: DeviceOf takes a
// *gpu.Device, BufferOf a *gpu.Buffer. Any other argument panics.
var (
	DeviceOf func(d any) Device
	BufferOf func(b any) Buffer
)
