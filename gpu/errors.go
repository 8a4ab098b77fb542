package gpu

import (
	"errors"
	"fmt"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// installHint is part of every "no Vulkan" error.
const installHint = "install a Vulkan loader and driver (Debian: apt-get install mesa-vulkan-drivers libvulkan1 libvulkan-dev; " +
	"mesa-vulkan-drivers provides lavapipe, which runs Vulkan on the CPU)"

// Errors of package gpu. Errors returned by the package, and errors of GPU
// tasks, wrap one of these (test with errors.Is) and, when a Vulkan call
// failed, a *VkError naming the call and its VkResult.
var (
	// ErrNoDevice: no Vulkan loader, no driver or no usable device. Code
	// that asked for "GPU or CPU" tests for it and goes on without a GPU.
	ErrNoDevice = errors.New("gpu: no Vulkan device")
	// ErrDeviceLost: the device was lost (VK_ERROR_DEVICE_LOST, or an
	// executor gave up on a hung queue). Every later GPU task fails fast.
	ErrDeviceLost = errors.New("gpu: device lost")
	// ErrOutOfMemory: a host or device allocation failed or would exceed
	// the memory heap.
	ErrOutOfMemory = errors.New("gpu: out of memory")
	// ErrTimeout: a fence did not signal within ExecutorOptions.FenceTimeout.
	ErrTimeout = errors.New("gpu: fence time-out")
	// ErrClosed: the device, executor, buffer or arena was closed.
	// errors.Is(err, sched.ErrClosed) holds too, but its text names no
	// scheduler (an error about a closed device must not say
	// "scheduler closed").
	ErrClosed error = closedError{}
	// ErrDeviceOverride: Options.Device or the VKJOBS_DEVICE variable
	// names no usable device (or there is no Vulkan to look in). It does
	// not wrap ErrNoDevice, so code that goes on without a GPU when there
	// is none stops when the user asked for a device that is not there.
	ErrDeviceOverride = errors.New("gpu: the device override matches no usable device")
	// ErrNoBinding: the task's kernel has no usable GPU binding.
	ErrNoBinding = errors.New("gpu: kernel has no GPU binding")
	// ErrBadBinding: the binding is invalid (bad SPIR-V, missing entry
	// point, workgroup size beyond the device's limits...).
	ErrBadBinding = bind.ErrBadBinding
	// ErrBadStream: a stream cannot be bound (unknown or closed buffer,
	// out of range, misaligned, beyond the device's binding range).
	ErrBadStream = errors.New("gpu: invalid stream")
	// ErrValidation: the validation layer reported an error.
	ErrValidation = errors.New("gpu: validation error")
	// ErrArenaFull: an Arena has no room left until Reset.
	ErrArenaFull = errors.New("gpu: arena full")
)

// Result is a VkResult value. It is this package's own type so that no
// type of the internal binding (gpu/internal/vkshim) leaks out of the
// package.
type Result int32

// VkResult values used by the package.
const (
	Success                   Result = 0
	NotReady                  Result = 1
	Timeout                   Result = 2
	EventSet                  Result = 3
	EventReset                Result = 4
	Incomplete                Result = 5
	ErrorOutOfHostMemory      Result = -1
	ErrorOutOfDeviceMemory    Result = -2
	ErrorInitializationFailed Result = -3
	ErrorDeviceLost           Result = -4
	ErrorMemoryMapFailed      Result = -5
	ErrorLayerNotPresent      Result = -6
	ErrorExtensionNotPresent  Result = -7
	ErrorFeatureNotPresent    Result = -8
	ErrorIncompatibleDriver   Result = -9
	ErrorTooManyObjects       Result = -10
	ErrorFormatNotSupported   Result = -11
	ErrorFragmentedPool       Result = -12
	ErrorUnknown              Result = -13
	ErrorOutOfPoolMemory      Result = -1000069000
	ErrorInvalidShaderNV      Result = -1000012000
	ErrorValidationFailedEXT  Result = -1000011001
)

var resultNames = map[Result]string{
	Success:                   "VK_SUCCESS",
	NotReady:                  "VK_NOT_READY",
	Timeout:                   "VK_TIMEOUT",
	EventSet:                  "VK_EVENT_SET",
	EventReset:                "VK_EVENT_RESET",
	Incomplete:                "VK_INCOMPLETE",
	ErrorOutOfHostMemory:      "VK_ERROR_OUT_OF_HOST_MEMORY",
	ErrorOutOfDeviceMemory:    "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	ErrorInitializationFailed: "VK_ERROR_INITIALIZATION_FAILED",
	ErrorDeviceLost:           "VK_ERROR_DEVICE_LOST",
	ErrorMemoryMapFailed:      "VK_ERROR_MEMORY_MAP_FAILED",
	ErrorLayerNotPresent:      "VK_ERROR_LAYER_NOT_PRESENT",
	ErrorExtensionNotPresent:  "VK_ERROR_EXTENSION_NOT_PRESENT",
	ErrorFeatureNotPresent:    "VK_ERROR_FEATURE_NOT_PRESENT",
	ErrorIncompatibleDriver:   "VK_ERROR_INCOMPATIBLE_DRIVER",
	ErrorTooManyObjects:       "VK_ERROR_TOO_MANY_OBJECTS",
	ErrorFormatNotSupported:   "VK_ERROR_FORMAT_NOT_SUPPORTED",
	ErrorFragmentedPool:       "VK_ERROR_FRAGMENTED_POOL",
	ErrorUnknown:              "VK_ERROR_UNKNOWN",
	ErrorOutOfPoolMemory:      "VK_ERROR_OUT_OF_POOL_MEMORY",
	ErrorInvalidShaderNV:      "VK_ERROR_INVALID_SHADER_NV",
	ErrorValidationFailedEXT:  "VK_ERROR_VALIDATION_FAILED_EXT",
	SuboptimalKHR:             "VK_SUBOPTIMAL_KHR",
	ErrorOutOfDateKHR:         "VK_ERROR_OUT_OF_DATE_KHR",
	ErrorSurfaceLostKHR:       "VK_ERROR_SURFACE_LOST_KHR",
}

// VkResult values of the swapchain extension (package gpu/gfx presents).
const (
	SuboptimalKHR       Result = 1000001003
	ErrorOutOfDateKHR   Result = -1000001004
	ErrorSurfaceLostKHR Result = -1000000000
)

func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// VkError is a failed Vulkan call: its name and the VkResult it returned.
// It matches ErrDeviceLost, ErrOutOfMemory, ErrTimeout and ErrNoDevice with
// errors.Is when the result means that.
type VkError struct {
	Call   string // e.g. "vkQueueSubmit"
	Result Result
}

func (e *VkError) Error() string {
	return fmt.Sprintf("gpu: %s: %v", e.Call, e.Result)
}

// Is reports whether the result means target.
func (e *VkError) Is(target error) bool {
	switch target {
	case ErrDeviceLost:
		return e.Result == ErrorDeviceLost
	case ErrOutOfMemory:
		return e.Result == ErrorOutOfHostMemory || e.Result == ErrorOutOfDeviceMemory ||
			e.Result == ErrorOutOfPoolMemory || e.Result == ErrorFragmentedPool
	case ErrTimeout:
		return e.Result == Timeout
	case ErrNoDevice:
		return e.Result == ErrorIncompatibleDriver || e.Result == ErrorInitializationFailed
	}
	return false
}

// Check turns a VkResult into nil (Success) or a *VkError naming the
// call. It is the one conversion of a Vulkan result to an error, for this
// package and for gpu/gfx, which calls Vulkan through the same shim and
// reports its failures as the same *VkError (so errors.Is sees
// ErrDeviceLost, ErrOutOfMemory... alike from either).
func Check(call string, r Result) error {
	if r == Success {
		return nil
	}
	return &VkError{Call: call, Result: r}
}

// check is Check under the name this package's call sites use; it
// inlines to Check's body.
func check(call string, r Result) error { return Check(call, r) }

// closedError is ErrClosed: its own text, and Is(sched.ErrClosed).
type closedError struct{}

func (closedError) Error() string        { return "gpu: closed" }
func (closedError) Is(target error) bool { return target == sched.ErrClosed }
