package bind

import (
	"errors"
	"strings"

	"github.com/vkjobs/vkjobs/sched"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParseSPIRV feeds ParseSPIRV, Binding.Validate and CheckSPIRV
// mutations of real compute modules: malformed input must come back as an
// error, never a panic or a hang.
func FuzzParseSPIRV(f *testing.F) {
	for _, pat := range []string{"testdata/*.spv", "../testdata/*.spv", "../gfx/gfx_shaders/*.spv"} {
		files, _ := filepath.Glob(pat)
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if m, err := ParseSPIRV(code); err == nil && m == nil {
				t.Error("ParseSPIRV: nil module without an error")
			}
			b := &Binding{SPIRV: code}
			_ = b.Validate()
			_ = b.Check([]Stream{{Name: "x", Stride: 4}}, []Stream{{Name: "y", Stride: 4}})
			_ = CheckSPIRV(code, "main")
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("ParseSPIRV of %d bytes did not return within 10 s", len(code))
		}
	})
}

// TestCheckStreamCountsBeyondContract: Check with more streams than the
// contract's MaxStreams bindings per direction (a caller other than
// sched.Registry, which caps them) returns an error naming the count; it
// neither panics nor passes.
func TestCheckStreamCountsBeyondContract(t *testing.T) {
	code := glsl(t, `#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer In0 { float x[]; };
layout(binding = 4) writeonly buffer Out0 { float y[]; };
`+pc+`void main() { uint i = pc.begin + gl_GlobalInvocationID.x; if (i < pc.end) { y[i] = x[i]; } }`)
	b := &Binding{SPIRV: code}
	one := []Stream{{Name: "x", Stride: 4}}
	if err := b.Check(one, []Stream{{Name: "y", Stride: 4}}); err != nil {
		t.Fatalf("valid binding: %v", err)
	}
	many := make([]Stream, MaxStreams+1)
	for i := range many {
		many[i] = Stream{Name: string(rune('a' + i)), Stride: 4}
	}
	for _, c := range []struct {
		name    string
		in, out []Stream
	}{
		{"outputs", one, append([]Stream{{Name: "y", Stride: 4}}, many[1:]...)},
		{"inputs", many, []Stream{{Name: "y", Stride: 4}}},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%d %s: Check panicked: %v", MaxStreams+1, c.name, r)
				}
			}()
			err = b.Check(c.in, c.out)
		}()
		if err == nil || !errors.Is(err, ErrBadBinding) || !strings.Contains(err.Error(), "5") {
			t.Errorf("%d %s: Check: %v, want an ErrBadBinding naming the count", MaxStreams+1, c.name, err)
		}
	}
	// Of on a kernel without a GPU version.
	if Of(&sched.Kernel{}) != nil {
		t.Error("Of of a kernel without GPU: not nil")
	}
}
