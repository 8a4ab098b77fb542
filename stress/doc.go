// Package stress holds the cross-cutting reliability harness: randomized
// task graphs over the public API that mix every affinity the product has
// (CPU workers, registered threads, the GPU on a real Vulkan device, the
// SPU-style executor and learned Auto placement), with failures and Close
// while work is queued everywhere. It has no API of its own; its tests are
// the product. The scheduler-only stress, model-based randomized test and
// soak (sched.TestStress, sched.TestModel, make soak) live in package sched; the decoders' fuzz targets beside each decoder
// (make fuzz).
package stress
