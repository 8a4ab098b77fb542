package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// GLFW must run on the process's main thread.
func init() { runtime.LockOSThread() }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "crowd:", err)
		var stop *interrupted
		if errors.As(err, &stop) {
			os.Exit(stop.exitCode())
		}
		os.Exit(1)
	}
}

type timeval = syscall.Timeval

func numCPU() int { return runtime.NumCPU() }
