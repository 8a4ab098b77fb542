package placement

import (
	"testing"

	"github.com/vkjobs/vkjobs/affinity/internal/affinitytest"
	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/sched"
)

// The fixtures of the placement tests and benchmarks are package
// affinitytest's, shared with package spu's tests; these names bind the
// ones used here.
var (
	rng               = affinitytest.Rng
	instancedSkinTask = affinitytest.InstancedSkinTask
	saxpyTask         = affinitytest.SaxpyTask
	reference         = affinitytest.Reference
	must              = affinitytest.Must
)

// kernelRegistry registers package kernels' kernels; SkinLBS gets an SPU
// binding that streams its vertices per item (valid with Params[0] = 0).
func kernelRegistry(t testing.TB) *sched.Registry {
	t.Helper()
	return affinitytest.KernelRegistry(t, &spu.Binding{ItemIn: [sched.MaxStreams]bool{0: true}})
}
