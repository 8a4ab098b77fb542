package sched

import (
	"errors"
	"testing"
)

// fakeBinding is a GPU binding of a type no package of the project knows:
// the scheduler takes any GPUBinding and only asks it to check the streams.
type fakeBinding struct{ err error }

func (f *fakeBinding) CheckStreams(in, out []StreamSpec) error { return f.err }

func TestRegisterChecksGPUBinding(t *testing.T) {
	noCPU := func(*Ctx, *TaskData) error { return nil }
	r := NewRegistry()
	k := Kernel{Name: "fake", Kind: Streaming, In: []StreamSpec{{Name: "x", Stride: 4}}, CPU: noCPU, GPU: &fakeBinding{}}
	if err := r.Register(1, k); err != nil {
		t.Fatalf("Register with a matching binding: %v", err)
	}
	bad := errors.New("stride mismatch")
	k.GPU = &fakeBinding{err: bad}
	if err := r.Register(2, k); !errors.Is(err, bad) {
		t.Fatalf("Register with a mismatched binding: err = %v, want it to wrap %v", err, bad)
	}
	if r.Lookup(2) != nil {
		t.Fatal("a refused kernel was registered")
	}
}
