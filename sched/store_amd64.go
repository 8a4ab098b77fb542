//go:build amd64 && !race

package sched

// storeRelease64 and storeRelease32 store with release ordering only. Go's
// atomic stores are sequentially consistent, which on amd64 means an XCHG
// (a locked instruction, about 20 cycles); the owner's push onto its deque
// needs only release ordering: the item must be visible before the new
// bottom. x86 never reorders a store with earlier stores, so a plain MOV
// suffices, and the compiler keeps memory operations in program order (each
// store takes the memory state the previous one produced, and a load is
// scheduled between the stores around it). They are plain Go stores,
// inlined: written in assembly, as first, each was a call through an ABI
// wrapper, several per task (BENCHMARKS.md, sched-peers). Readers use
// atomic loads. Under the race detector (which must see the
// synchronisation) and on other architectures, store_other.go uses
// sync/atomic instead.
func storeRelease64(p *int64, v int64) { *p = v }

func storeRelease32(p *uint32, v uint32) { *p = v }

// storeUnpublished32 stores a field of a slot that is not yet published
// (a later storeRelease publishes it) but that Abandon may read atomically
// for a slot being reused, and then discard. A plain store, inlined.
func storeUnpublished32(p *uint32, v uint32) { *p = v }

// storeUnpublished64 is storeUnpublished32 for 64-bit fields.
func storeUnpublished64(p *uint64, v uint64) { *p = v }
