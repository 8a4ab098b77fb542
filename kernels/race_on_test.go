//go:build race

package kernels

// raceOn is true under the race detector, whose checkptr instrumentation
// refuses the fake slice headers some limit tests build.
const raceOn = true
