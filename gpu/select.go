package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// DeviceType is the kind of a physical device (VkPhysicalDeviceType).
type DeviceType int

// Device types in Vulkan's numbering.
const (
	TypeOther      DeviceType = 0
	TypeIntegrated DeviceType = 1
	TypeDiscrete   DeviceType = 2
	TypeVirtual    DeviceType = 3
	TypeCPU        DeviceType = 4
)

func (t DeviceType) String() string {
	switch t {
	case TypeOther:
		return "other"
	case TypeIntegrated:
		return "integrated GPU"
	case TypeDiscrete:
		return "discrete GPU"
	case TypeVirtual:
		return "virtual GPU"
	case TypeCPU:
		return "CPU"
	}
	return fmt.Sprintf("type(%d)", int(t))
}

// rank orders device types for automatic selection: lower is better.
func (t DeviceType) rank() int {
	switch t {
	case TypeDiscrete:
		return 0
	case TypeIntegrated:
		return 1
	case TypeVirtual:
		return 2
	case TypeCPU:
		return 3
	}
	return 4
}

// DeviceInfo describes one physical device as the loader reports it.
type DeviceInfo struct {
	Index      int // position in vkEnumeratePhysicalDevices order
	Name       string
	Type       DeviceType
	VendorID   uint32
	DeviceID   uint32
	APIVersion string // e.g. "1.3.230"
	Driver     uint32 // driverVersion, vendor-specific encoding
	Compute    bool   // has a queue family with compute
	Timestamps bool   // that queue family has timestamps
	// Missing lists the device extensions Options.DeviceExtensions asks
	// for (e.g. VK_KHR_swapchain for a window) that the device lacks; such
	// a device is not usable.
	Missing []string
}

// usable reports whether Open can use the device: a compute queue and
// every requested extension.
func (d DeviceInfo) usable() bool { return d.Compute && len(d.Missing) == 0 }

func (d DeviceInfo) String() string {
	return fmt.Sprintf("#%d %q (%v, Vulkan %s)", d.Index, d.Name, d.Type, d.APIVersion)
}

// Selection reports which device Open chose and why. Print it: the library
// itself never logs.
type Selection struct {
	Chosen     DeviceInfo
	Reason     string       // e.g. "VKJOBS_DEVICE=\"llvm\" matched the name"
	Candidates []DeviceInfo // every enumerated device
}

func (s Selection) String() string {
	return fmt.Sprintf("gpu: using device %v: %s (of %d devices)", s.Chosen, s.Reason, len(s.Candidates))
}

// EnvDevice is the environment variable that overrides device selection
// when Options.Device is empty: a device index ("1") or a case-insensitive
// substring of the device name ("llvmpipe", "nvidia").
const EnvDevice = "VKJOBS_DEVICE"

// SelectDevice picks a device from devs. With an empty override it prefers
// a discrete GPU, then an integrated one, then a virtual one, then a CPU
// implementation (lavapipe), then anything else, skipping devices without a
// compute queue; ties go to the lowest index. A non-empty override is a
// device index or a case-insensitive name substring (first match by index,
// and the reason then lists the other matches), with blanks around it
// ignored; a blank override, or one that matches no usable device, is an
// error wrapping
// ErrDeviceOverride (not ErrNoDevice), never a silent fallback. source names the override's origin for the reason text (e.g.
// "VKJOBS_DEVICE"). SelectDevice is pure: it is what Open uses, and tests
// call it with stubbed device lists.
func SelectDevice(devs []DeviceInfo, override, source string) (Selection, error) {
	sel := Selection{Candidates: devs}
	if len(devs) == 0 {
		return sel, fmt.Errorf("%w: the Vulkan loader reports no physical device; %s", ErrNoDevice, installHint)
	}
	if override != "" {
		if source == "" {
			source = "override"
		}
		// Blanks around an index or a name are a typing accident; a
		// blank override would match every name with a space in it.
		trimmed := strings.TrimSpace(override)
		if trimmed == "" {
			return sel, fmt.Errorf("%w: %s=%q is blank: name a device index or a name substring, or unset it for automatic selection", ErrDeviceOverride, source, override)
		}
		if n, err := strconv.Atoi(trimmed); err == nil {
			for _, d := range devs {
				if d.Index == n {
					if !d.Compute {
						return sel, fmt.Errorf("%w: %s=%q selects %v, which has no compute queue", ErrDeviceOverride, source, override, d)
					}
					if len(d.Missing) > 0 {
						return sel, fmt.Errorf("%w: %s=%q selects %v, which lacks the extensions %s", ErrDeviceOverride, source, override, d, strings.Join(d.Missing, ", "))
					}
					sel.Chosen = d
					sel.Reason = fmt.Sprintf("%s=%q selects device index %d", source, override, n)
					return sel, nil
				}
			}
			return sel, fmt.Errorf("%w: %s=%q: no device with index %d among %s", ErrDeviceOverride, source, override, n, listDevices(devs))
		}
		want := strings.ToLower(trimmed)
		var matches []DeviceInfo
		for _, d := range devs {
			if d.usable() && strings.Contains(strings.ToLower(d.Name), want) {
				matches = append(matches, d)
			}
		}
		if len(matches) > 0 {
			sel.Chosen = matches[0]
			sel.Reason = fmt.Sprintf("%s=%q matched the device name", source, override)
			if len(matches) > 1 {
				// Two of a kind (two identical GPUs) are common: take the
				// first, but say so, and how to pick another.
				sel.Reason += fmt.Sprintf(" (the first of %d matches: %s; set it to an index to choose another)", len(matches), listDevices(matches))
			}
			return sel, nil
		}
		return sel, fmt.Errorf("%w: %s=%q matches no device name with a compute queue and the requested extensions among %s", ErrDeviceOverride, source, override, listDevices(devs))
	}
	best := -1
	for i, d := range devs {
		if !d.usable() {
			continue
		}
		if best < 0 || d.Type.rank() < devs[best].Type.rank() {
			best = i
		}
	}
	if best < 0 {
		return sel, fmt.Errorf("%w: no device has a compute queue and the requested extensions among %s", ErrNoDevice, listDevices(devs))
	}
	sel.Chosen = devs[best]
	usable := 0
	for _, d := range devs {
		if d.usable() {
			usable++
		}
	}
	if usable == 1 {
		sel.Reason = fmt.Sprintf("the only device with a compute queue and the requested extensions (a %v)", sel.Chosen.Type)
	} else {
		sel.Reason = fmt.Sprintf("best type among %d usable devices (order: discrete GPU, integrated GPU, virtual GPU, CPU)", usable)
	}
	return sel, nil
}

func listDevices(devs []DeviceInfo) string {
	var b strings.Builder
	b.WriteString("[")
	for i, d := range devs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.String())
		if len(d.Missing) > 0 {
			b.WriteString(" lacking " + strings.Join(d.Missing, ", "))
		}
	}
	b.WriteString("]")
	return b.String()
}
