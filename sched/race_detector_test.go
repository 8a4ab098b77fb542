//go:build race

package sched

// raceDetector: the test binary runs under the race detector, which
// makes the scheduler several times slower: the randomized tests run less.
const raceDetector = true
