//go:build linux

package pinning_test

import (
	"fmt"

	"github.com/vkjobs/vkjobs/affinity/pinning"
)

// Pinning a registered thread (say the render thread) to a CPU of its
// own: LockAndPin locks the goroutine to its OS thread first, and unpin
// restores the mask before unlocking.
func ExampleLockAndPin() {
	allowed, err := pinning.AllowedCPUs()
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		unpin, err := pinning.LockAndPin(allowed.Max())
		if err != nil {
			fmt.Println(err)
			return
		}
		mine, _ := pinning.ThreadCPUs()
		fmt.Println("pinned to one CPU:", mine.Count() == 1)
		// ... register with the scheduler and run frames here ...
		fmt.Println("unpin:", unpin())
	}()
	<-done
	// Output:
	// pinned to one CPU: true
	// unpin: <nil>
}
