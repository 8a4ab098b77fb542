//go:build !linux

package pinning

import "fmt"

// AllowedCPUs is not supported on this OS: it returns ErrUnsupported.
// Discover then falls back to runtime.NumCPU CPUs.
func AllowedCPUs() (CPUSet, error) {
	return CPUSet{}, fmt.Errorf("pinning: AllowedCPUs: %w", ErrUnsupported)
}

// RefreshAllowedCPUs is not supported on this OS.
func RefreshAllowedCPUs() (CPUSet, error) { return AllowedCPUs() }

// ThreadCPUs is not supported on this OS.
func ThreadCPUs() (CPUSet, error) {
	return CPUSet{}, fmt.Errorf("pinning: ThreadCPUs: %w", ErrUnsupported)
}

// PinCurrentThread is not supported on this OS: it returns ErrUnsupported
// and pins nothing.
func PinCurrentThread(cpu int) error {
	return fmt.Errorf("pinning: pin to CPU %d: %w", cpu, ErrUnsupported)
}

// PinCurrentThreadTo is not supported on this OS.
func PinCurrentThreadTo(set CPUSet) error {
	return fmt.Errorf("pinning: pin to CPUs %s: %w", set, ErrUnsupported)
}

func setaffinity(s CPUSet) error {
	return fmt.Errorf("pinning: pin to CPUs %s: %w", s, ErrUnsupported)
}
