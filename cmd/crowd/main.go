package main

import (
	"errors"
	"flag"
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
		os.Exit(1)
	}
}

// flagHelp is what parseFlags returns for -h: not an error of the run.
var flagHelp = flag.ErrHelp

var _ = errors.Is

type timeval = syscall.Timeval

func numCPU() int { return runtime.NumCPU() }
