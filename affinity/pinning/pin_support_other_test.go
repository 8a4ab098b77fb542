//go:build !linux

package pinning

// pinSupported tells the tests whether this OS can pin threads (pin_other.go
// returns ErrUnsupported).
const pinSupported = false
