// Package stress holds the cross-cutting reliability harness: randomized
// task graphs over the public API that mix every affinity the product has
// (CPU workers, registered threads, the GPU on a real Vulkan device, the
// SPU-style executor and learned Auto placement), with tasks that fail the
// ways users' kernels do (a CPU kernel that returns an error, panics or
// calls runtime.Goexit; a GPU task whose input lies outside its buffer,
// which the executor refuses when it binds it), and Close while work is
// queued everywhere. The tests check what package sched promises of a
// failure: the task's error names it, its kernel and the cause; its
// dependents fail unrun, each error naming the dependency; its parent
// fails; every other task completes with the right result; nothing hangs
// (a watchdog bounds each round) and Close returns. It has no API of its
// own; its tests are the product. The scheduler-only stress, model-based
// randomized test and soak (sched.TestStress, sched.TestModel, make soak)
// live in package sched; the decoders' fuzz targets beside each decoder
// (make fuzz).
package stress
