package gpu

import (
	"testing"

	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
)

const (
	mDL  = vk.MemoryPropertyDeviceLocalBit
	mHV  = vk.MemoryPropertyHostVisibleBit
	mHC  = vk.MemoryPropertyHostCoherentBit
	mHCa = vk.MemoryPropertyHostCachedBit
	gib  = uint64(1) << 30
	bar  = uint64(256) << 20
)

// memoryTables are memory-properties tables of the kinds of device the
// backend meets, with the memory types newBlock must pick on each: device
// (memDevice), staging (memStaging) and, where the device gets direct
// memory, direct (-1 where it stages).
var memoryTables = []struct {
	name            string
	typ             DeviceType
	types           []memType
	heaps           []uint64
	direct          int
	device, staging int
}{
	{
		name:  "discrete without resizable BAR",
		typ:   TypeDiscrete,
		heaps: []uint64{8 * gib, 16 * gib, bar},
		types: []memType{
			{0, 1}, {mDL, 0}, {mHV | mHC, 1}, {mHV | mHC | mHCa, 1}, {mDL | mHV | mHC, 2},
		},
		direct: -1, device: 1, staging: 3,
	},
	{
		name:  "discrete with resizable BAR",
		typ:   TypeDiscrete,
		heaps: []uint64{8 * gib, 16 * gib},
		types: []memType{
			{mDL, 0}, {mHV | mHC, 1}, {mHV | mHC | mHCa, 1}, {mDL | mHV | mHC, 0},
		},
		direct: 3, device: 0, staging: 2,
	},
	{
		// The BAR window's mapped type is listed before the VRAM heap's:
		// taking the first match would fill the 256 MiB window.
		name:  "discrete listing its small BAR heap first",
		typ:   TypeDiscrete,
		heaps: []uint64{bar, 8 * gib, 16 * gib},
		types: []memType{
			{mDL | mHV | mHC, 0}, {mDL, 1}, {mHV | mHC, 2}, {mHV | mHC | mHCa, 2}, {mDL | mHV | mHC, 1},
		},
		direct: 4, device: 1, staging: 3,
	},
	{
		// The BAR window's type is host-cached, the VRAM heap's is not:
		// preferring host-cached over the heap would fill the window.
		name:  "discrete listing its small BAR heap last",
		typ:   TypeDiscrete,
		heaps: []uint64{8 * gib, 16 * gib, bar},
		types: []memType{
			{mDL, 0}, {mDL | mHV | mHC, 0}, {mHV | mHC, 1}, {mHV | mHC | mHCa, 1}, {mDL | mHV | mHC | mHCa, 2},
		},
		direct: 1, device: 0, staging: 3,
	},
	{
		name:  "integrated, unified memory",
		typ:   TypeIntegrated,
		heaps: []uint64{4 * gib},
		types: []memType{
			{mDL, 0}, {mDL | mHV | mHC, 0}, {mDL | mHV | mHC | mHCa, 0},
		},
		direct: 2, device: 0, staging: 2,
	},
	{
		name:   "lavapipe",
		typ:    TypeCPU,
		heaps:  []uint64{2 * gib},
		types:  []memType{{mDL | mHV | mHC | mHCa, 0}},
		direct: 0, device: 0, staging: 0,
	},
}

// TestMemoryTypeChoice checks, on each table, that directMemory decides
// from the heap newBlock then allocates direct memory from, and the types
// chooseMemType picks for device, staging and direct memory.
func TestMemoryTypeChoice(t *testing.T) {
	for _, c := range memoryTables {
		t.Run(c.name, func(t *testing.T) {
			all := ^uint32(0)
			direct := directMemory(c.typ, c.types, c.heaps)
			if direct != (c.direct >= 0) {
				t.Fatalf("directMemory = %v, want %v", direct, c.direct >= 0)
			}
			if got := chooseMemType(c.types, c.heaps, all, mDL, 0); got != c.device {
				t.Errorf("device memory: type %d, want %d", got, c.device)
			}
			if got := chooseMemType(c.types, c.heaps, all, mHV|mHC, mHCa); got != c.staging {
				t.Errorf("staging memory: type %d, want %d", got, c.staging)
			}
			if !direct {
				return
			}
			want, prefer := directMemFlags()
			got := chooseMemType(c.types, c.heaps, all, want, prefer)
			if got != c.direct {
				t.Fatalf("direct memory: type %d (heap %d bytes), want %d", got, c.heaps[c.types[got].heap], c.direct)
			}
			// Direct memory on a discrete GPU must come from (nearly) the
			// whole device-local heap, as directMemory assumed.
			if c.typ == TypeDiscrete {
				if h := c.heaps[c.types[got].heap]; h < c.heaps[c.types[c.device].heap]-c.heaps[c.types[c.device].heap]/10 {
					t.Errorf("direct memory on a %d-byte heap, the device-local heap has %d", h, c.heaps[c.types[c.device].heap])
				}
			}
		})
	}
}

// TestMemoryTypeChoiceBits checks that chooseMemType keeps to the types a
// buffer allows (memoryTypeBits), refuses a table with none and ignores a
// type whose heap index is out of range.
func TestMemoryTypeChoiceBits(t *testing.T) {
	heaps := []uint64{bar, 8 * gib}
	types := []memType{{mDL | mHV | mHC, 0}, {mDL | mHV | mHC, 1}, {mDL | mHV | mHC, 7}}
	want, prefer := directMemFlags()
	if got := chooseMemType(types, heaps, ^uint32(0), want, prefer); got != 1 {
		t.Errorf("all types allowed: type %d, want 1", got)
	}
	if got := chooseMemType(types, heaps, 1<<0|1<<2, want, prefer); got != 0 {
		t.Errorf("types 0 and 2 allowed: type %d, want 0 (type 2 names no heap)", got)
	}
	if got := chooseMemType(types, heaps, 1<<2, want, prefer); got != -1 {
		t.Errorf("only type 2 (no such heap) allowed: type %d, want -1", got)
	}
	if got := chooseMemType(types, heaps, ^uint32(0), want|mHCa, 0); got != -1 {
		t.Errorf("host-cached required, none has it: type %d, want -1", got)
	}
}

// TestQueueFamilyChoice checks pickQueueFamily's choice and that the
// family chosen is the one whose timestamp support counts.
func TestQueueFamilyChoice(t *testing.T) {
	gfx, comp, xfer := vk.QueueGraphicsBit, vk.QueueComputeBit, vk.QueueFlags(0x4)
	cases := []struct {
		name string
		fams []vk.QueueFamily
		want int
		ts   bool
	}{
		{"universal family without timestamps after a compute one with them",
			[]vk.QueueFamily{{Flags: comp | xfer, Count: 2, TimestampValid: 64}, {Flags: gfx | comp | xfer, Count: 1}}, 1, false},
		{"universal family with timestamps after a compute one without",
			[]vk.QueueFamily{{Flags: comp, Count: 2}, {Flags: gfx | comp, Count: 1, TimestampValid: 36}}, 1, true},
		{"compute-only device", []vk.QueueFamily{{Flags: xfer, Count: 1, TimestampValid: 64}, {Flags: comp, Count: 4, TimestampValid: 64}}, 1, true},
		{"graphics family without queues", []vk.QueueFamily{{Flags: gfx | comp, TimestampValid: 64}, {Flags: comp, Count: 1}}, 1, false},
		{"no compute", []vk.QueueFamily{{Flags: gfx, Count: 1, TimestampValid: 64}, {Flags: xfer, Count: 1}}, -1, false},
	}
	for _, c := range cases {
		got := pickQueueFamily(c.fams)
		if got != c.want {
			t.Errorf("%s: family %d, want %d", c.name, got, c.want)
			continue
		}
		if got >= 0 && (c.fams[got].TimestampValid > 0) != c.ts {
			t.Errorf("%s: family %d timestamps %v, want %v", c.name, got, c.fams[got].TimestampValid > 0, c.ts)
		}
	}
}
