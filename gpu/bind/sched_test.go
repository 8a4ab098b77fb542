package bind_test

import (
	"errors"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

type otherBinding struct{}

func (otherBinding) CheckStreams(in, out []sched.StreamSpec) error { return nil }

func TestOfKernel(t *testing.T) {
	b := &bind.Binding{}
	var nilB *bind.Binding
	for _, c := range []struct {
		name string
		gpu  sched.GPUBinding
		want *bind.Binding
		ok   bool
	}{
		{"none", nil, nil, true},
		{"nil *Binding", nilB, nil, true},
		{"*Binding", b, b, true},
		{"another type", otherBinding{}, nil, false},
	} {
		k := &sched.Kernel{Name: "k", GPU: c.gpu}
		got, ok := bind.OfKernel(k)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: OfKernel = %p, %v; want %p, %v", c.name, got, ok, c.want, c.ok)
		}
		if bind.Of(k) != c.want {
			t.Errorf("%s: Of = %p, want %p", c.name, bind.Of(k), c.want)
		}
	}
	if err := nilB.CheckStreams(nil, nil); err != nil {
		t.Errorf("nil *Binding: CheckStreams = %v, want nil (no GPU version)", err)
	}
	// Register calls CheckStreams: a binding with no SPIR-V is refused.
	r := sched.NewRegistry()
	err := r.Register(1, sched.Kernel{Name: "k", Kind: sched.Streaming, CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }, GPU: &bind.Binding{}})
	if !errors.Is(err, bind.ErrBadBinding) {
		t.Errorf("Register with an empty binding: err = %v, want %v", err, bind.ErrBadBinding)
	}
}
