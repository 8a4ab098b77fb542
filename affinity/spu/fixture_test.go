package spu

import (
	"testing"

	"github.com/vkjobs/vkjobs/affinity/internal/affinitytest"
	"github.com/vkjobs/vkjobs/sched"
)

// The fixtures of the SPU executor's tests are package affinitytest's,
// shared with package placement's tests (it takes the SPU binding as an
// argument: it cannot import this package, whose tests import it); these
// names bind the ones used here.
var (
	rng               = affinitytest.Rng
	randFloats        = affinitytest.RandFloats
	skinTask          = affinitytest.SkinTask
	instancedSkinTask = affinitytest.InstancedSkinTask
	saxpyTask         = affinitytest.SaxpyTask
	reference         = affinitytest.Reference
	must              = affinitytest.Must
)

// kernelRegistry registers package kernels' kernels; SkinLBS gets an SPU
// binding that streams its vertices per item (valid with Params[0] = 0).
func kernelRegistry(t testing.TB) *sched.Registry {
	t.Helper()
	return affinitytest.KernelRegistry(t, &Binding{ItemIn: [sched.MaxStreams]bool{0: true}})
}
