package kernels

import (
	"hash/crc32"
	"regexp"
	"strconv"
	"testing"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/shaders"
)

// TestCPUZeroAllocs: every CPU kernel runs without allocating.
func TestCPUZeroAllocs(t *testing.T) {
	for _, id := range IDs() {
		k, _ := definition(t, id)
		d := fixture(t, id, 64)
		d.Begin, d.End = 3, 61
		var err error
		allocs := testing.AllocsPerRun(20, func() { err = k.CPU(nil, &d) })
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per run, want 0", k.Name, allocs)
		}
	}
	var blocks [4]uint32
	if allocs := testing.AllocsPerRun(20, func() { _ = CRC32COfBlocks(blocks[:], 3*CRCBlockBytes+5) }); allocs != 0 {
		t.Errorf("CRC32COfBlocks: %v allocations per run", allocs)
	}
}

// TestLayouts pins the std430 layouts that the shaders and doc.go state.
func TestLayouts(t *testing.T) {
	var (
		v  SkinVertex
		x  Transform
		dq DualQuat
	)
	checks := []struct {
		what      string
		got, want uintptr
	}{
		{"Mat4", unsafe.Sizeof(Mat4{}), 64},
		{"SkinVertex", unsafe.Sizeof(v), 48},
		{"SkinVertex.Normal", unsafe.Offsetof(v.Normal), 12},
		{"SkinVertex.Joints", unsafe.Offsetof(v.Joints), 24},
		{"SkinVertex.Palette", unsafe.Offsetof(v.Palette), 28},
		{"SkinVertex.Weights", unsafe.Offsetof(v.Weights), 32},
		{"SkinnedVertex", unsafe.Sizeof(SkinnedVertex{}), 24},
		{"Transform", unsafe.Sizeof(x), 48},
		{"Transform.Trans", unsafe.Offsetof(x.Trans), 16},
		{"Transform.Scale", unsafe.Offsetof(x.Scale), 32},
		{"DualQuat", unsafe.Sizeof(dq), 32},
		{"DualQuat.Dual", unsafe.Offsetof(dq.Dual), 16},
		{"MinMax", unsafe.Sizeof(MinMax{}), 8},
		{"Segment", unsafe.Sizeof(Segment{}), 8},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.what, c.got, c.want)
		}
	}
	// Declared strides agree with the Go types.
	strides := map[sched.KernelID][2][]uint32{
		SkinLBS:          {{48, 64}, {24}},
		SkinDQS:          {{48, 32}, {24}},
		LocalToModelSkin: {{0, 4, 64}, {0, 0}},
		MinMaxF32:        {{4}, {8}},
		ExpandLerp:       {{8}, {4}},
	}
	for id, s := range strides {
		k, _ := definition(t, id)
		for i, sp := range k.In {
			if sp.Stride != s[0][i] {
				t.Errorf("%s input %d stride %d, want %d", k.Name, i, sp.Stride, s[0][i])
			}
		}
		for i, sp := range k.Out {
			if sp.Stride != s[1][i] {
				t.Errorf("%s output %d stride %d, want %d", k.Name, i, sp.Stride, s[1][i])
			}
		}
	}
}

// TestShaderCRCTable: the table that crc32c_blocks.comp builds in shared
// memory (8 shift-and-xor steps per byte with the polynomial written in
// the shader) is the CRC-32C table of hash/crc32.
func TestShaderCRCTable(t *testing.T) {
	src, err := shaders.Source("crc32c_blocks")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`c = \(c >> 1\) \^ \(0x([0-9a-f]{8})u & \(0u - \(c & 1u\)\)\);`).FindAllStringSubmatch(src, -1)
	if len(m) != 1 {
		t.Fatalf("found %d table-building steps in crc32c_blocks.comp, want 1", len(m))
	}
	poly, _ := strconv.ParseUint(m[0][1], 16, 32)
	tab := crc32.MakeTable(crc32.Castagnoli)
	for i := range 256 {
		c := uint32(i)
		for range 8 {
			c = c>>1 ^ uint32(poly)&-(c&1)
		}
		if c != tab[i] {
			t.Fatalf("shader table entry %d is %#08x, want %#08x", i, c, tab[i])
		}
	}
}
