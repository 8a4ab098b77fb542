package gpu

import (
	"errors"
	"strings"
	"testing"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

func TestSelectDevice(t *testing.T) {
	cpu := DeviceInfo{Index: 0, Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Type: TypeCPU, Compute: true}
	igpu := DeviceInfo{Index: 1, Name: "Intel(R) UHD Graphics 620", Type: TypeIntegrated, Compute: true}
	dgpu := DeviceInfo{Index: 2, Name: "NVIDIA GeForce RTX 3070", Type: TypeDiscrete, Compute: true}
	virt := DeviceInfo{Index: 3, Name: "Virtio-GPU Venus", Type: TypeVirtual, Compute: true}
	dgpu2 := DeviceInfo{Index: 4, Name: "AMD Radeon RX 6800", Type: TypeDiscrete, Compute: true}
	noCompute := DeviceInfo{Index: 5, Name: "Display-only thing", Type: TypeDiscrete}
	other := DeviceInfo{Index: 6, Name: "Mystery", Type: TypeOther, Compute: true}
	// A compute-only GPU that cannot present (no VK_KHR_swapchain).
	headless := DeviceInfo{Index: 7, Name: "NVIDIA A100", Type: TypeDiscrete, Compute: true, Missing: []string{"VK_KHR_swapchain"}}

	// Invalid inputs first.
	errCases := []struct {
		name     string
		devs     []DeviceInfo
		override string
		msg      string
	}{
		{"no devices", nil, "", "no physical device"},
		{"no compute queue", []DeviceInfo{noCompute}, "", "compute queue"},
		{"index out of range", []DeviceInfo{cpu, igpu}, "7", "no device with index 7"},
		{"index without compute", []DeviceInfo{cpu, noCompute}, "5", "no compute queue"},
		{"name matches nothing", []DeviceInfo{cpu, igpu}, "geforce", "matches no device"},
		{"name matches only a device without compute", []DeviceInfo{cpu, noCompute}, "display", "matches no device"},
		{"index of a device lacking an extension", []DeviceInfo{cpu, headless}, "7", "lacks the extensions VK_KHR_swapchain"},
		{"only a device lacking an extension", []DeviceInfo{headless}, "", "lacking VK_KHR_swapchain"},
		{"blank", []DeviceInfo{cpu, igpu}, " ", "is blank"},
		{"negative index", []DeviceInfo{cpu, igpu}, "-1", "no device with index -1"},
		{"garbage", []DeviceInfo{cpu, igpu}, "\x00?*", "matches no device"},
	}
	for _, c := range errCases {
		_, err := SelectDevice(c.devs, c.override, EnvDevice)
		want := ErrNoDevice
		if c.override != "" {
			want = ErrDeviceOverride // a named device is never "no device"
		}
		if !errors.Is(err, want) || !strings.Contains(err.Error(), c.msg) || (c.override != "" && errors.Is(err, ErrNoDevice)) {
			t.Errorf("%s: err = %v, want %v mentioning %q", c.name, err, want, c.msg)
		}
	}
	if _, err := SelectDevice(nil, "", ""); !strings.Contains(err.Error(), "mesa-vulkan-drivers libvulkan1 libvulkan-dev") {
		t.Errorf("no devices: %v does not say what to install", err)
	}

	cases := []struct {
		name     string
		devs     []DeviceInfo
		override string
		want     int
		reason   string
	}{
		{"only lavapipe", []DeviceInfo{cpu}, "", 0, "only device"},
		{"integrated over cpu", []DeviceInfo{cpu, igpu}, "", 1, "best type"},
		{"discrete over integrated and cpu", []DeviceInfo{cpu, igpu, dgpu}, "", 2, "best type"},
		{"virtual over cpu", []DeviceInfo{cpu, virt}, "", 3, "best type"},
		{"integrated over virtual", []DeviceInfo{virt, igpu}, "", 1, "best type"},
		{"first of equal discrete GPUs", []DeviceInfo{cpu, dgpu, dgpu2}, "", 2, "best type"},
		{"cpu over other", []DeviceInfo{other, cpu}, "", 0, "best type"},
		{"skips devices without compute", []DeviceInfo{noCompute, cpu}, "", 0, "only device"},
		{"skips devices lacking a requested extension", []DeviceInfo{igpu, headless}, "", 1, "only device"},
		{"override by index", []DeviceInfo{cpu, igpu, dgpu}, "0", 0, "index 0"},
		{"override by name, case-insensitive", []DeviceInfo{cpu, igpu, dgpu}, "LLVMPIPE", 0, "matched the device name"},
		{"override by name substring", []DeviceInfo{cpu, igpu, dgpu}, "uhd", 1, "matched"},
		{"override by index with blanks", []DeviceInfo{cpu, igpu, dgpu}, " 2 ", 2, "index 2"},
		{"name matching two devices: the first, and the reason says so", []DeviceInfo{cpu, dgpu, headless, DeviceInfo{Index: 8, Name: "NVIDIA GeForce RTX 3070", Type: TypeDiscrete, Compute: true}}, "nvidia", 2,
			`the first of 2 matches: [#2 "NVIDIA GeForce RTX 3070" (discrete GPU, Vulkan ), #8`},
	}
	for _, c := range cases {
		sel, err := SelectDevice(c.devs, c.override, EnvDevice)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if sel.Chosen.Index != c.want || !strings.Contains(sel.Reason, c.reason) || len(sel.Candidates) != len(c.devs) {
			t.Errorf("%s: chose %v (%q), want index %d with a reason mentioning %q", c.name, sel.Chosen, sel.Reason, c.want, c.reason)
		}
		if c.override != "" && !strings.Contains(sel.Reason, EnvDevice) {
			t.Errorf("%s: reason %q does not name the override's source", c.name, sel.Reason)
		}
	}
}

func TestDeviceTypeStrings(t *testing.T) {
	for ty, want := range map[DeviceType]string{TypeDiscrete: "discrete GPU", TypeIntegrated: "integrated GPU",
		TypeVirtual: "virtual GPU", TypeCPU: "CPU", TypeOther: "other", DeviceType(9): "type(9)"} {
		if ty.String() != want {
			t.Errorf("%d: %q, want %q", int(ty), ty.String(), want)
		}
	}
}

// TestDirectMemory: streams live in host-mapped device memory on unified
// memory and with resizable BAR, not in a discrete GPU's 256 MiB BAR
// window.
func TestDirectMemory(t *testing.T) {
	const (
		local   = vk.MemoryPropertyDeviceLocalBit
		host    = vk.MemoryPropertyHostVisibleBit | vk.MemoryPropertyHostCoherentBit
		cached  = vk.MemoryPropertyHostCachedBit
		gib     = uint64(1) << 30
		barSize = 256 << 20
	)
	// A discrete GPU: VRAM, system memory, and the BAR window.
	bar := []memType{{local, 0}, {host, 1}, {host | cached, 1}, {local | host, 2}}
	barHeaps := []uint64{8 * gib, 16 * gib, barSize}
	// The same with resizable BAR: the whole of VRAM is host-visible.
	rebar := []memType{{local, 0}, {host, 1}, {local | host, 0}}
	rebarHeaps := []uint64{8 * gib, 16 * gib}
	// Unified memory (integrated GPU, lavapipe): one heap.
	uma := []memType{{local | host | cached, 0}}
	umaHeaps := []uint64{12 * gib}
	for _, c := range []struct {
		name  string
		typ   DeviceType
		types []memType
		heaps []uint64
		want  bool
	}{
		{"discrete, 256 MiB BAR", TypeDiscrete, bar, barHeaps, false},
		{"discrete, resizable BAR", TypeDiscrete, rebar, rebarHeaps, true},
		{"integrated", TypeIntegrated, uma, umaHeaps, true},
		{"cpu", TypeCPU, uma, umaHeaps, true},
		{"discrete, no host-visible device memory", TypeDiscrete, bar[:3], barHeaps, false},
		{"integrated, carve-out without a mapped type", TypeIntegrated, []memType{{local, 0}, {host, 1}}, []uint64{gib, 8 * gib}, false},
		{"heap index out of range", TypeCPU, []memType{{local | host, 3}}, umaHeaps, false},
	} {
		if got := directMemory(c.typ, c.types, c.heaps); got != c.want {
			t.Errorf("%s: direct = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStampClock: raw timestamps of a counter with few valid bits convert
// to host time across wraps, also within a batch that straddles one.
func TestStampClock(t *testing.T) {
	for _, c := range []struct {
		bits   uint32
		period float64
	}{{36, 52.083}, {32, 1}, {64, 1}, {48, 83.333}, {0, 1}} {
		clockOff := int64(123_456_789)
		mask := ^uint64(0)
		if c.bits > 0 && c.bits < 64 {
			mask = 1<<c.bits - 1
		}
		raw := func(host int64) uint64 { return uint64(float64(host-clockOff)/c.period) & mask }
		wrap := float64(mask) * c.period
		for _, at := range []float64{0.001, 0.5, 1, 2.9999999, 7.25} {
			submit := clockOff + int64(at*wrap)
			if at*wrap > 1<<62 {
				submit = clockOff + int64(at*1e12)
			}
			t0 := raw(submit + 20_000)
			conv := stampClock(t0, submit, c.bits, c.period, clockOff).at
			for _, dt := range []int64{20_000, 1_000_000, 50_000_000} {
				want := submit + dt
				if got := conv(raw(want)); got-want > int64(2*c.period)+2 || want-got > int64(2*c.period)+2 {
					t.Errorf("%d bits, period %g, %g wraps in: stamp at +%d ns converts to %d, want %d", c.bits, c.period, at, dt, got, want)
				}
			}
		}
	}
}
