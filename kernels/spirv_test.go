package kernels

import (
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/shaders"
)

// TestSPIRVShippedShaders reads every shipped module and checks what the
// reader finds against the kernel that ships it: one GLCompute "main",
// workgroup size from spec constant 0, a 40-byte push-constant block, and
// exactly the declared streams' bindings with the right kinds.
func TestSPIRVShippedShaders(t *testing.T) {
	names := map[string]bool{}
	for _, n := range shaders.Names() {
		names[n] = true
	}
	for _, id := range IDs() {
		k, b := definition(t, id)
		delete(names, k.Name)
		m, err := ParseSPIRV(b.SPIRV)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if m.Version != 0x00010000 {
			t.Errorf("%s: SPIR-V version %#x, want 1.0 (glslc --target-env=vulkan1.0)", k.Name, m.Version)
		}
		if len(m.EntryPoints) != 1 || m.EntryPoints[0] != (SPIRVEntryPoint{Model: ModelGLCompute, Name: "main"}) {
			t.Errorf("%s: entry points %v", k.Name, m.EntryPoints)
		}
		if m.LocalSizeXSpecID != 0 || m.PushConstantBytes != bind.PushConstantSize || m.Bound == 0 {
			t.Errorf("%s: local size spec id %d, push constants %d bytes, bound %d", k.Name, m.LocalSizeXSpecID, m.PushConstantBytes, m.Bound)
		}
		var want []SPIRVResource
		for i := range k.In {
			kind := ResourceStorage
			if b.UniformIn[i] {
				kind = ResourceUniform
			}
			want = append(want, SPIRVResource{Binding: uint32(i), Kind: kind})
		}
		for j := range k.Out {
			want = append(want, SPIRVResource{Binding: uint32(bind.FirstOutBinding + j), Kind: ResourceStorage})
		}
		if len(m.Resources) != len(want) {
			t.Fatalf("%s: resources %+v, want %+v", k.Name, m.Resources, want)
		}
		for i := range want {
			r := m.Resources[i]
			if r.Binding >= bind.FirstOutBinding && (r.ReadOnly || !r.Written) {
				t.Errorf("%s: output binding %d is readonly or never written", k.Name, r.Binding)
			}
			if r.Binding < bind.FirstOutBinding && r.Written {
				t.Errorf("%s: input binding %d is written", k.Name, r.Binding)
			}
			if !r.Used {
				t.Errorf("%s: binding %d is not used", k.Name, r.Binding)
			}
			r.Name, r.Block, r.ElemStride, r.ElemOffset, r.ElemSize, r.ReadOnly, r.Written, r.Used = "", "", 0, 0, 0, false, false, false
			if r != want[i] {
				t.Fatalf("%s: resource %d is %+v, want %+v", k.Name, i, m.Resources[i], want[i])
			}
		}
	}
	// Shaders that other packages register and check themselves (kernels
	// cannot import them): anim_sample is anim.SampleKernel's.
	delete(names, "anim_sample")
	if len(names) != 0 {
		t.Errorf("shaders without a kernel: %v", names)
	}
}

// asm assembles a module from instructions given as (opcode, operands...).
func asm(bound uint32, insts ...[]uint32) []byte {
	w := []uint32{spirvMagic, 0x00010000, 0, bound, 0}
	for _, in := range insts {
		w = append(w, uint32(len(in))<<16|in[0])
		w = append(w, in[1:]...)
	}
	return spvBytes(w)
}

func str(s string) []uint32 {
	b := append([]byte(s), 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return spvWords(b)
}

func cat(parts ...[]uint32) []uint32 {
	var w []uint32
	for _, p := range parts {
		w = append(w, p...)
	}
	return w
}

func TestSPIRVMalformed(t *testing.T) {
	lbs := shaders.MustSPIRV("skin_lbs")
	header := spvWords(lbs)[:5]
	withWords := func(extra ...uint32) []byte { return spvBytes(append(append([]uint32(nil), header...), extra...)) }
	cases := []struct {
		name  string
		b     []byte
		error string
	}{
		{"empty", nil, "at least 5"},
		{"short", []byte{3, 2, 0x23, 7}, "at least 5"},
		{"ragged", append(append([]byte(nil), lbs...), 0), "whole number of 32-bit words"},
		{"bad magic", spvBytes([]uint32{0xdeadbeef, 0x10000, 0, 1, 0}), "bad magic"},
		{"big endian", spvBytes([]uint32{0x03022307, 0x10000, 0, 1, 0}), "big-endian"},
		{"bad version", spvBytes([]uint32{spirvMagic, 0x01000000, 0, 1, 0}), "bad version"},
		{"bound 0", spvBytes([]uint32{spirvMagic, 0x10000, 0, 0, 0}), "id bound is 0"},
		{"word count 0", withWords(0x0000_0011), "word count 0"},
		{"word count past the end", withWords(0x0005_000f, 5, 4), "needs 5 words, only 3 left"},
		{"entry point without nul", asm(10, cat([]uint32{opEntryPoint, 5, 1}, []uint32{0x6e69616d})), "without terminating nul"},
		{"entry point too short", asm(10, []uint32{opEntryPoint, 5}), "needs at least 3"},
		{"decoration without literal", asm(10, []uint32{opDecorate, 4, decBinding}), "misses its literal"},
		{"member offset without literal", asm(10, []uint32{opMemberDecorate, 4, 0, decOffset}), "needs at least 4"},
		{"type too short", asm(10, []uint32{opTypeVector, 4, 3}), "needs at least 3"},
		{"cyclic push-constant type", asm(10,
			[]uint32{opTypeInt, 2, 32, 0},
			[]uint32{opConstant, 2, 3, 4},
			[]uint32{opTypeArray, 5, 5, 3},
			[]uint32{opTypePointer, 6, scPushConstant, 5},
			[]uint32{opVariable, 6, 7, scPushConstant}), "cyclic"},
		{"huge push-constant array", asm(10,
			[]uint32{opTypeInt, 2, 32, 0},
			[]uint32{opConstant, 2, 3, 0xffffffff},
			[]uint32{opTypeArray, 5, 2, 3},
			[]uint32{opDecorate, 5, decArrayStride, 0xffffffff},
			[]uint32{opTypePointer, 6, scPushConstant, 5},
			[]uint32{opVariable, 6, 7, scPushConstant}), "bytes"},
		{"array length not a constant", asm(10,
			[]uint32{opTypeInt, 2, 32, 0},
			[]uint32{opTypeArray, 5, 2, 9},
			[]uint32{opTypePointer, 6, scPushConstant, 5},
			[]uint32{opVariable, 6, 7, scPushConstant}), "is not a constant"},
		{"struct member without offset", asm(10,
			[]uint32{opTypeInt, 2, 32, 0},
			[]uint32{opTypeStruct, 5, 2},
			[]uint32{opTypePointer, 6, scPushConstant, 5},
			[]uint32{opVariable, 6, 7, scPushConstant}), "has no Offset"},
		{"two push-constant blocks", asm(10,
			[]uint32{opTypeInt, 2, 32, 0},
			[]uint32{opTypePointer, 6, scPushConstant, 2},
			[]uint32{opVariable, 6, 7, scPushConstant},
			[]uint32{opVariable, 6, 8, scPushConstant}), "more than one push-constant block"},
		{"variable of a non-pointer type", asm(10,
			[]uint32{opTypeInt, 2, 32, 0},
			[]uint32{opDecorate, 7, decDescriptorSet, 0},
			[]uint32{opDecorate, 7, decBinding, 0},
			[]uint32{opVariable, 2, 7, scUniform}), "is not a pointer type"},
		{"workgroup size not a composite", asm(10,
			[]uint32{opDecorate, 4, decBuiltIn, builtInWorkgroupSize}), "not a constant composite"},
	}
	for _, c := range cases {
		_, err := ParseSPIRV(c.b)
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.error)
		}
	}
}

// TestSPIRVTruncated: every prefix of a real module and every single-word
// corruption parses or fails cleanly.
func TestSPIRVTruncated(t *testing.T) {
	lbs := shaders.MustSPIRV("skin_lbs")
	for n := 0; n <= len(lbs); n += 4 {
		_, _ = ParseSPIRV(lbs[:n])
	}
	w := spvWords(lbs)
	for i := range w {
		c := append([]uint32(nil), w...)
		c[i] ^= 0xffff0000
		_, _ = ParseSPIRV(spvBytes(c))
		c[i] = w[i] + 1
		_, _ = ParseSPIRV(spvBytes(c))
	}
}

func TestSPIRVCrafted(t *testing.T) {
	// A minimal hand-assembled module: SPIR-V 1.3 style StorageBuffer
	// class, a named uniform block, a spec-constant workgroup size.
	b := asm(40,
		cat([]uint32{opEntryPoint, ModelGLCompute, 1}, str("k")),
		cat([]uint32{opName, 10}, str("palette")),
		[]uint32{opDecorate, 12, decBlock},
		[]uint32{opDecorate, 13, decBlock},
		[]uint32{opDecorate, 10, decDescriptorSet, 0},
		[]uint32{opDecorate, 10, decBinding, 1},
		[]uint32{opDecorate, 11, decDescriptorSet, 0},
		[]uint32{opDecorate, 11, decBinding, 4},
		[]uint32{opDecorate, 20, decSpecID, 0},
		[]uint32{opDecorate, 23, decBuiltIn, builtInWorkgroupSize},
		[]uint32{opMemberDecorate, 12, 0, decOffset, 0},
		[]uint32{opMemberDecorate, 13, 0, decOffset, 0},
		[]uint32{opTypeInt, 2, 32, 0},
		[]uint32{opTypeStruct, 12, 2},
		[]uint32{opTypeStruct, 13, 2},
		[]uint32{opTypePointer, 14, scUniform, 12},
		[]uint32{opTypePointer, 15, scStorageBuffer, 13},
		[]uint32{opVariable, 14, 10, scUniform},
		[]uint32{opVariable, 15, 11, scStorageBuffer},
		[]uint32{opSpecConstant, 2, 20, 64},
		[]uint32{opConstant, 2, 21, 1},
		[]uint32{opSpecConstantComposite, 22, 23, 20, 21, 21},
	)
	m, err := ParseSPIRV(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []SPIRVResource{{Binding: 1, Kind: ResourceUniform, Name: "palette"}, {Binding: 4, Kind: ResourceStorage}}
	if len(m.Resources) != 2 || m.Resources[0] != want[0] || m.Resources[1] != want[1] || m.LocalSizeXSpecID != 0 ||
		len(m.EntryPoints) != 1 || m.EntryPoints[0].Name != "k" || m.PushConstantBytes != 0 {
		t.Fatalf("parsed %+v", m)
	}
	// It passes Check for a kernel with an uniform input 1 and output 0...
	k := sched.Kernel{Name: "crafted",
		In:  []sched.StreamSpec{{Name: "a"}, {Name: "b"}},
		Out: []sched.StreamSpec{{Name: "c"}},
		GPU: &bind.Binding{SPIRV: b, Entry: "k", UniformIn: [4]bool{1: true}}}
	// ...but the module has no function, so it uses neither binding:
	// Check ignores unused declarations, and inputs may go without a
	// binding, but the output is never stored to.
	wantErr(t, "crafted", Check(&k), `binding 4 (output stream 0 "c") is never stored to`)
	k.In = k.In[1:]
	k.GPU = &bind.Binding{SPIRV: b, Entry: "k", UniformIn: [4]bool{0: true}}
	wantErr(t, "crafted", Check(&k), `binding 4 (output stream 0 "c") is never stored to`)
}

// FuzzSPIRV: no input makes the reader (or Check on what it accepts) panic
// or loop. Seeds: every shipped module and a few crafted ones.
func FuzzSPIRV(f *testing.F) {
	for _, n := range shaders.Names() {
		f.Add(shaders.MustSPIRV(n))
	}
	f.Add([]byte{})
	f.Add(spvBytes([]uint32{spirvMagic, 0x10000, 0, 1, 0}))
	f.Add(asm(10, []uint32{opTypeArray, 5, 5, 3}, []uint32{opTypePointer, 6, scPushConstant, 5}, []uint32{opVariable, 6, 7, scPushConstant}))
	k := sched.Kernel{Name: "fuzz",
		In:  []sched.StreamSpec{{Name: "a"}, {Name: "b"}},
		Out: []sched.StreamSpec{{Name: "c"}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseSPIRV(b)
		if err != nil {
			if m != nil {
				t.Fatal("module and error both returned")
			}
			return
		}
		if m.Bound == 0 || len(b)%4 != 0 {
			t.Fatalf("accepted a module with bound 0 or %d bytes", len(b))
		}
		for i := 1; i < len(m.Resources); i++ {
			if a, c := m.Resources[i-1], m.Resources[i]; a.Set > c.Set || (a.Set == c.Set && a.Binding > c.Binding) {
				t.Fatalf("resources not sorted: %+v", m.Resources)
			}
		}
		kk := k
		kk.GPU = &bind.Binding{SPIRV: b}
		_ = Check(&kk)
	})
}

// TestSPIRVSharedTypesAreLinear: a push-constant type in which each level
// is a struct of two members of the level below must not take 2^depth
// steps (type sizes are memoised).
func TestSPIRVSharedTypesAreLinear(t *testing.T) {
	insts := [][]uint32{{opTypeInt, 2, 32, 0}}
	prev := uint32(2)
	for d := uint32(0); d < maxTypeDepth-1; d++ {
		id := 100 + d
		insts = append(insts,
			[]uint32{opMemberDecorate, id, 0, decOffset, 0},
			[]uint32{opMemberDecorate, id, 1, decOffset, 0},
			[]uint32{opTypeStruct, id, prev, prev})
		prev = id
	}
	insts = append(insts, []uint32{opTypePointer, 6, scPushConstant, prev}, []uint32{opVariable, 6, 7, scPushConstant})
	m, err := ParseSPIRV(asm(200, insts...))
	if err != nil {
		t.Fatal(err)
	}
	if m.PushConstantBytes != 4 {
		t.Fatalf("push constants %d bytes, want 4", m.PushConstantBytes)
	}
}
