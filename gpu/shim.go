package gpu

// The Go side of package gpu's Vulkan calls. Every one of them (the
// loader: dlopen of libvulkan.so.1 and the one vkGetInstanceProcAddr;
// object creation and destruction; the hot path: submit, dispatch,
// barriers, copies, descriptor writes, fences; the debug-report callback)
// goes through the C code of package gpu/internal/vkshim, the one package
// that uses cgo (its doc says why it is not a generated binding). Package
// gpu imports it as vk and calls it directly: its functions, and the
// methods of the per-device table Device.shim (a vk.Dev), converting
// their vk.Result to Result where it checks one. This file holds only
// what adds to vkshim: loading the loader once (loadVulkan), routing
// debug-report messages to each device's log (registerSink, debugReport)
// and the errors of building a device table (newDevTable).
//
// Validation messages become errors, never crashes: pipeline creation runs
// locked to its thread and fails with ErrValidation when the layer objected
// on that thread (vk.CaptureReset, vk.Captured), and a command buffer whose
// recording drew an error message is not submitted: its tasks fail with
// ErrValidation.

import (
	"fmt"
	"sync"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

var (
	loaderOnce sync.Once
	loaderErr  error
)

// loadVulkan dlopens the loader once per process.
func loadVulkan() error {
	loaderOnce.Do(func() {
		if msg := vk.Load(); msg != "" {
			loaderErr = fmt.Errorf("%w: cannot load the Vulkan loader (libvulkan.so.1: %s); %s",
				ErrNoDevice, msg, installHint)
		}
	})
	return loaderErr
}

// Debug-report routing: the C callback passes back the user value given at
// registration; it indexes debugSinks.
var (
	debugMu    sync.Mutex
	debugSinks = map[uintptr]*messageLog{}
	debugNext  uintptr
)

func init() { vk.DebugReport = debugReport }

func registerSink(m *messageLog) uintptr {
	debugMu.Lock()
	defer debugMu.Unlock()
	debugNext++
	debugSinks[debugNext] = m
	return debugNext
}

func unregisterSink(id uintptr) {
	debugMu.Lock()
	delete(debugSinks, id)
	debugMu.Unlock()
}

func debugReport(user uintptr, flags uint32, code int32, layer, msg string) {
	debugMu.Lock()
	m := debugSinks[user]
	debugMu.Unlock()
	if m == nil {
		return
	}
	m.add(Message{Severity: severityOf(flags), Code: code, Layer: layer, Text: msg})
}

// newDevTable loads the per-device function table of the shim (C memory;
// Device.shim, whose methods package gpu calls directly, converting their
// vk.Result to Result where it checks one). It adds the errors: which
// entry point the driver lacks, or an allocation failure.
func newDevTable(inst vk.Instance, dev vk.Device) (vk.Dev, error) {
	t, missing, ok := vk.NewDev(inst, dev)
	if !ok {
		if missing == "" {
			return vk.Dev{}, fmt.Errorf("gpu: calloc of the device function table failed: %w", ErrOutOfMemory)
		}
		return vk.Dev{}, fmt.Errorf("gpu: vkGetDeviceProcAddr(%s) returned NULL: %w", missing, ErrNoDevice)
	}
	return t, nil
}
