//go:build !(linux || windows) || !amd64 || race

package sched

// haveProcessFence is false: the owner of a thread's slot cache
// announces itself with a sequentially consistent store (see slotCache).
// Off amd64 and under the race detector storeRelease32 is such a store
// anyway; on amd64 outside Linux and Windows (macOS, the BSDs) there is no
// process-wide fence to make up for a plain one.
const haveProcessFence = false

// processFence is not needed where haveProcessFence is false.
func processFence() {}
