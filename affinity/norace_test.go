//go:build !race

package affinity

const raceEnabled = false
