//go:build !amd64 || race

package sched

import "sync/atomic"

func storeRelease64(p *int64, v int64)   { atomic.StoreInt64(p, v) }
func storeRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

func storeUnpublished32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
func storeUnpublished64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
