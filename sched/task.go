package sched

import (
	"fmt"
	"unsafe"
)

// TaskID names a task. It packs the scheduler's tag, the pool slot and the
// slot's generation:
//
//	 63      52 51                     20 19            0
//	+----------+-------------------------+---------------+
//	|   tag    |       generation        |  slot index   |
//	+----------+-------------------------+---------------+
//
// A slot's generation is bumped each time the slot is freed, so an ID whose
// generation is older than its slot's names a task that finished: IsFinished
// reports true for it, never a wrong answer. The zero TaskID is "no task"
// (NoTask) and is valid as a parent or dependency meaning "none".
//
// No two open schedulers share a tag (New fails when all MaxSchedulers tags
// are taken), and a tag freed by Close is given out again only after every
// other free tag, with generations that start above the last one issued
// under it: a scheduler's generations all lie at or above its base, so an
// ID of an earlier holder of its tag is older than the base and is refused
// as foreign (ErrForeignTask), however many schedulers came and went. Only
// 2^31 generations issued under one tag, the limit of the generation itself,
// could make an old ID look new.
type TaskID uint64

// NoTask is the zero TaskID: no parent, no dependency.
const NoTask TaskID = 0

const (
	idIndexBits = 20
	idGenBits   = 32
	idTagBits   = 64 - idIndexBits - idGenBits
	idIndexMask = 1<<idIndexBits - 1
	idGenMask   = 1<<idGenBits - 1
	// MaxPoolSize is the largest task pool a scheduler can have.
	MaxPoolSize = 1 << idIndexBits
	// MaxSchedulers is how many schedulers can be open (made by New and
	// not yet closed) at once in a process.
	MaxSchedulers = 1<<idTagBits - 1
)

func makeID(tag uint16, gen uint32, idx uint32) TaskID {
	return TaskID(uint64(tag)<<(idIndexBits+idGenBits) | uint64(gen)<<idIndexBits | uint64(idx))
}

func (id TaskID) index() uint32 { return uint32(id & idIndexMask) }

// index1 is index()+1, or 0 for NoTask (a slot link's encoding).
func (id TaskID) index1() uint32 {
	if id == NoTask {
		return 0
	}
	return id.index() + 1
}
func (id TaskID) gen() uint32   { return uint32(id>>idIndexBits) & idGenMask }
func (id TaskID) sched() uint16 { return uint16(id >> (idIndexBits + idGenBits)) }

// String formats the ID as task#index.gen (the scheduler's tag omitted).
func (id TaskID) String() string {
	if id == NoTask {
		return "task#none"
	}
	return fmt.Sprintf("task#%d.%d", id.index(), id.gen())
}

// KernelID names a registered kernel. KernelNone (0) is the empty kernel: a
// task with it does no work of its own and completes when its children do,
// which makes it a join.
type KernelID uint16

// KernelNone is the empty kernel, always registered.
const KernelNone KernelID = 0

// Kind is the shape of a kernel's work (Molecule's task model; see the
// package documentation).
type Kind uint8

const (
	// Simple kernels get kernel data only; they are never split.
	Simple Kind = iota
	// Streaming kernels map work item i of the input streams to item i of
	// the output streams (1:1) and are split into ranges.
	Streaming
	// Reduce kernels read Factor input elements per output element (N:1),
	// e.g. the average of every 32 elements.
	Reduce
	// Expand kernels write Factor output elements per input element (1:N).
	Expand
)

func (k Kind) String() string {
	switch k {
	case Simple:
		return "simple"
	case Streaming:
		return "streaming"
	case Reduce:
		return "reduce"
	case Expand:
		return "expand"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Priority orders runnable tasks: among tasks a thread can run, higher
// priority runs first. Within one priority a worker runs its own newest work
// first (depth first, cache warm) and steals the oldest work of others.
// Numeric order is priority order (PriorityLow < PriorityNormal <
// PriorityHigh), and the zero value is PriorityNormal.
type Priority int8

const (
	PriorityLow    Priority = -1
	PriorityNormal Priority = 0
	PriorityHigh   Priority = 1
)

// numPriorities is the number of priority levels (queues per thread).
const numPriorities = int(PriorityHigh-PriorityLow) + 1

// String returns "low", "normal" or "high".
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	case PriorityHigh:
		return "high"
	}
	return fmt.Sprintf("priority(%d)", int8(p))
}

// level maps a valid priority to its queue level: 0 (High) is served
// first, then 1 (Normal), then 2 (Low).
func (p Priority) level() int { return int(PriorityHigh - p) }

// Affinity says where a task may run. The zero value is AnyWorker.
//
//	AnyWorker      any CPU worker or helping registered thread
//	OnThread(i)    only registered thread i (e.g. main or render thread)
//	GPU            the executor attached with AttachExecutor(ExecGPU, ...)
//	SPU            the executor attached as ExecSPU (local-store emulation)
//	Auto           the Placer chooses per task; without a Placer, AnyWorker
type Affinity uint32

const (
	AnyWorker Affinity = 0
	GPU       Affinity = 1 << 30
	SPU       Affinity = 2 << 30
	Auto      Affinity = 3 << 30
	// threadAffinity marks OnThread affinities; the low bits hold the index.
	threadAffinity Affinity = 1 << 29
	affKindMask    Affinity = 3 << 30
)

// OnThread returns the affinity that runs a task only on registered thread i
// (the order of RegisterThread calls, from 0).
func OnThread(i int) Affinity { return threadAffinity | Affinity(i&0xffff) }

// Thread reports the registered thread index of an OnThread affinity.
func (a Affinity) Thread() (int, bool) {
	if a&affKindMask == 0 && a&threadAffinity != 0 {
		return int(a & 0xffff), true
	}
	return 0, false
}

func (a Affinity) String() string {
	if i, ok := a.Thread(); ok {
		return fmt.Sprintf("thread(%d)", i)
	}
	switch a {
	case AnyWorker:
		return "cpu"
	case GPU:
		return "gpu"
	case SPU:
		return "spu"
	case Auto:
		return "auto"
	}
	return fmt.Sprintf("affinity(%#x)", uint32(a))
}

// BufferID names a device-resident buffer owned by an executor (for example
// a gpu.Buffer). A Stream that names one keeps its data on the device, so
// chained GPU kernels need no round trip through Go memory. 0 means none.
type BufferID uint32

// Stream is a run of Count elements of Stride bytes each. Its bytes are
// plain memory in std430-compatible layout, so the same bytes can be copied
// to a GPU buffer unchanged. A stream either has Bytes (host memory), or
// names a device buffer with Buffer and Offset, or both (host mirror).
type Stream struct {
	Bytes  []byte
	Stride uint32
	Count  uint32
	Buffer BufferID
	Offset uint64
}

// StreamOf makes a host stream over a slice of plain values (no pointers).
func StreamOf[T any](s []T) Stream {
	var z T
	size := uint32(unsafe.Sizeof(z))
	if len(s) == 0 {
		return Stream{Stride: size}
	}
	return Stream{
		Bytes:  unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*uintptr(size)),
		Stride: size,
		Count:  uint32(len(s)),
	}
}

// Valid reports whether the stream's fields agree with each other.
func (s Stream) Valid() bool {
	if s.Bytes != nil && uint64(len(s.Bytes)) < uint64(s.Stride)*uint64(s.Count) {
		return false
	}
	return true
}

// Params is a small block of plain kernel parameters (32 bytes). It is copied
// into the task by value, and a GPU binding copies it into push constants.
type Params [8]uint32

// MaxStreams is the number of input and of output streams a task can have.
const MaxStreams = 4

// TaskData is what a kernel sees: read-only kernel data and, for streaming,
// reduce and expand kernels, the element count, the range of work items this
// invocation must process, and up to four input and four output streams.
//
// Work items are elements for Streaming kernels, output elements for Reduce
// kernels and input elements for Expand kernels. Streams hold whole arrays;
// a kernel invoked on [Begin, End) indexes them with absolute item numbers.
type TaskData struct {
	Params   Params
	Data     any // read-only kernel data; store a pointer to avoid boxing
	Elements uint32
	Grain    uint32 // split grain in work items; 0 = the kernel's default
	Begin    uint32 // set by the scheduler: first work item of this invocation
	End      uint32 // set by the scheduler: one past the last work item
	In       [MaxStreams]Stream
	Out      [MaxStreams]Stream
}

// Task describes a task to add. It is copied into a pool slot by Add; the
// value can be reused by the caller immediately.
type Task struct {
	Kernel     KernelID
	Affinity   Affinity
	Priority   Priority
	Parent     TaskID // optional: the task completes before its parent does
	Dependency TaskID // optional: the task starts after this one completes
	Data       TaskData
}
