//go:build !amd64.v3

package kernels

// goFusesLBS: below GOAMD64=v3 the compiler emits no FMA, so lbsGo rounds
// every product and sum, like lbsAVX2.
const goFusesLBS = false
