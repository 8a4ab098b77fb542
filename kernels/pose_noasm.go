//go:build !amd64 || purego

package kernels

// No assembly here: poseChain always runs poseChainGo.
var (
	poseHasAsm = false
	poseFast   = false
)

func poseChainAVX2(local []Transform, parents []int32, model, invBind, skin []Mat4) {
	poseChainGo(local, parents, model, invBind, skin)
}
