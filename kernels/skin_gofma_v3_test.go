//go:build amd64.v3

package kernels

// goFusesLBS: with GOAMD64=v3 the compiler may fuse lbsGo's multiply-adds
// into FMAs, so lbsAVX2 (no FMA) differs from it by rounding.
const goFusesLBS = true
