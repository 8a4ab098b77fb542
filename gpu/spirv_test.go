package gpu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

func TestCheckSPIRV(t *testing.T) {
	le := func(words ...uint32) []byte {
		b := make([]byte, 4*len(words))
		for i, w := range words {
			binary.LittleEndian.PutUint32(b[4*i:], w)
		}
		return b
	}
	const opEntryPoint = 15 // SPIR-V specification, section 3.32
	header := []uint32{bind.SPVMagic, 0x00010000, 0, 100, 0}
	// Invalid modules first.
	bad := []struct {
		name string
		code []byte
		msg  string
	}{
		{"empty", nil, "whole number of 32-bit words"},
		{"not whole words", append(le(header...), 1), "whole number of 32-bit words"},
		{"wrong magic", le(0xdeadbeef, 0x10000, 0, 1, 0), "bad magic number"},
		{"big-endian", le(0x03022307, 0x10000, 0, 1, 0), "big-endian"},
		{"too new", le(bind.SPVMagic, 0x00010300, 0, 1, 0), "newer than 1.0"},
		{"zero word count", le(append(header, 0)...), "word count 0"},
		{"instruction past the end", le(append(header, 5<<16|opEntryPoint, bind.ModelGLCompute)...), "needs 5 words, only 2 left"},
		{"no entry point", le(header...), `no entry point "main"`},
		{"wrong entry name", le(append(header, 4<<16|opEntryPoint, bind.ModelGLCompute, 1, 0x006e6970)...), `no entry point "main" in the module (it has "pin" (GLCompute))`},
		{"no spec constant 0", le(append(header, 5<<16|opEntryPoint, bind.ModelGLCompute, 1, 0x6e69616d, 0)...), "specialization constant 0"},
	}
	for _, c := range bad {
		if err := bind.CheckSPIRV(c.code, "main"); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.msg)
		}
	}
	for name, code := range map[string][]byte{"saxpy": saxpySPV, "spin": spinSPV, "sum4": sum4SPV, "poly": polySPV} {
		if err := bind.CheckSPIRV(code, "main"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		b := Binding{SPIRV: code}
		if err := b.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", name, err)
		}
		b.Entry = "other"
		if err := b.Validate(); !errors.Is(err, ErrBadBinding) {
			t.Errorf("%s: Validate with a missing entry point: %v", name, err)
		}
	}
}

func TestBindingOf(t *testing.T) {
	for _, c := range []struct {
		gpu  *Binding
		want error
	}{
		{nil, ErrNoBinding},
		{&Binding{SPIRV: saxpySPV}, nil},
		{&Binding{SPIRV: saxpySPV, LocalSize: 32, Entry: "main", ItemsPerInvocation: 2}, nil},
	} {
		b, err := bindingOf(&sched.Kernel{Name: "k", GPU: c.gpu})
		if !errors.Is(err, c.want) {
			t.Errorf("GPU %v: err = %v, want %v", c.gpu, err, c.want)
			continue
		}
		if err == nil && (b.Entry != "main" || b.LocalSize == 0 || b.ItemsPerInvocation == 0) {
			t.Errorf("GPU %v: defaults not applied: %+v", c.gpu, b)
		}
	}
}

// TestSPIRVCurrent recompiles every testdata/*.comp and compares with the
// committed .spv (see testdata/gen.sh).
func TestSPIRVCurrent(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("glslc not installed (Debian: glslc); CI must check the committed SPIR-V")
		}
		t.Skip("skipping: glslc not installed (Debian package glslc)")
	}
	srcs, err := filepath.Glob("testdata/*.comp")
	must(t, err)
	if len(srcs) == 0 {
		t.Fatal("no testdata/*.comp")
	}
	for _, src := range srcs {
		out := filepath.Join(t.TempDir(), "x.spv")
		cmd := exec.Command("glslc", "--target-env=vulkan1.0", "-O", "-o", out, src)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("glslc %s: %v\n%s", src, err, msg)
		}
		got, err := os.ReadFile(out)
		must(t, err)
		committed, err := os.ReadFile(strings.TrimSuffix(src, ".comp") + ".spv")
		must(t, err)
		if !bytes.Equal(got, committed) {
			t.Errorf("%s: the committed .spv is stale; run sh gpu/testdata/gen.sh", src)
		}
	}
}
