package kernels

import (
	"os"
	"testing"
)

// goPaths is KERNELS_GO=1: it forces the assembly kernels (poseChain, lbs,
// dqs and the streaming loops of stream_amd64.s) onto their pure-Go paths
// for the whole test binary, so that every CPU kernel test covers the
// fallbacks, and the GPU tests, which do not run them, skip:
//
//	KERNELS_GO=1 go test ./kernels/
var goPaths = os.Getenv("KERNELS_GO") == "1"

func init() {
	if goPaths {
		poseFast = false
		lbsFast = false
		streamFast = false
	}
}

// skipOnGoPaths skips a test that runs no CPU kernel code under
// KERNELS_GO=1 (the ordinary run covers it).
func skipOnGoPaths(t testing.TB) {
	t.Helper()
	if goPaths {
		t.Skip("KERNELS_GO=1 runs the CPU kernels' Go paths; this test runs none")
	}
}
