package gpu

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// SPIR-V constants used by checkSPIRV.
const (
	spvMagic          = 0x07230203
	spvOpEntryPoint   = 15
	spvOpDecorate     = 71
	spvDecorSpecID    = 1
	spvModelGLCompute = 5
	spvMaxVersion     = 0x00010000 // SPIR-V 1.0: what a Vulkan 1.0 instance accepts
)

// checkSPIRV checks a module's structure before it reaches the driver: a
// malformed module would be reported by the validation layer, and some
// drivers (lavapipe among them) may crash on one. It checks the header,
// that every instruction fits, that entry is a GLCompute entry point, and
// that some constant is specialization constant 0 (local_size_x_id = 0).
// It is no substitute for spirv-val, which the build runs on every module.
func checkSPIRV(code []byte, entry string) error {
	if len(code) < 20 || len(code)%4 != 0 {
		return fmt.Errorf("SPIR-V module of %d bytes: not a whole number of words, or shorter than the header", len(code))
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(code[4*i:]) }
	n := len(code) / 4
	switch word(0) {
	case spvMagic:
	case 0x03022307:
		return fmt.Errorf("SPIR-V module is big-endian; only little-endian modules are accepted")
	default:
		return fmt.Errorf("not a SPIR-V module (magic %#08x, want %#08x)", word(0), spvMagic)
	}
	if v := word(1); v > spvMaxVersion {
		return fmt.Errorf("SPIR-V version %d.%d is newer than 1.0, which the Vulkan 1.0 instance accepts (compile with glslc --target-env=vulkan1.0)", v>>16&0xff, v>>8&0xff)
	}
	var entries []string
	found, spec0 := false, false
	for i := 5; i < n; {
		op, wc := word(i)&0xffff, int(word(i)>>16)
		if wc == 0 || i+wc > n {
			return fmt.Errorf("SPIR-V instruction at word %d (opcode %d) has word count %d, past the end of the module (%d words)", i, op, wc, n)
		}
		switch op {
		case spvOpEntryPoint:
			if wc >= 4 && word(i+1) == spvModelGLCompute {
				name := literal(code[4*(i+3) : 4*(i+wc)])
				entries = append(entries, name)
				found = found || name == entry
			}
		case spvOpDecorate:
			if wc >= 4 && word(i+2) == spvDecorSpecID && word(i+3) == 0 {
				spec0 = true
			}
		}
		i += wc
	}
	if !found {
		return fmt.Errorf("SPIR-V module has no GLCompute entry point %q (it has %q)", entry, entries)
	}
	if !spec0 {
		return fmt.Errorf("SPIR-V module has no specialization constant 0: declare layout(local_size_x_id = 0) in")
	}
	return nil
}

// literal decodes a SPIR-V literal string (NUL-terminated, word padded).
func literal(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}
