package sched

import (
	"fmt"
	"unsafe"
)

// View returns the stream's host memory as a []T: its Count elements of
// Stride bytes, each Stride/sizeof(T) values of T. It returns nil when the
// stream is empty or cannot be viewed as T: a Stride that is not a whole
// number of T, no host bytes, fewer bytes than Count elements, or memory
// misaligned for T. ViewOf is the same check with the reason as an error.
// View is small enough to inline: it is the kernels' hot path.
func View[T any](s Stream) []T {
	var z T
	size := uint64(unsafe.Sizeof(z))
	n := uint64(s.Count) * uint64(s.Stride)
	p := unsafe.Pointer(unsafe.SliceData(s.Bytes))
	if n == 0 || size == 0 || uint64(s.Stride)%size != 0 || uint64(len(s.Bytes)) < n || uintptr(p)%unsafe.Alignof(z) != 0 {
		return nil
	}
	return unsafe.Slice((*T)(p), n/size)
}

// ViewOf returns stream s as a []T of s.Count*per values, where each stream
// element is per consecutive T values (per = 1 for most streams). It fails,
// without panicking, when the stream's Stride is not per*sizeof(T), it has
// no host bytes (a device-only buffer), too few bytes for Count, or memory
// misaligned for T. An empty stream gives nil, nil. The error does not name
// the stream: callers wrap it ("input stream 1: %w"). Only failures allocate.
func ViewOf[T any](s Stream, per uint32) ([]T, error) {
	var z T
	size := uint64(unsafe.Sizeof(z))
	n := uint64(s.Count) * uint64(per)
	p := unsafe.Pointer(unsafe.SliceData(s.Bytes))
	if uint64(s.Stride) == uint64(per)*size {
		if n == 0 {
			return nil, nil
		}
		if size != 0 && uint64(len(s.Bytes)) >= n*size && uintptr(p)%unsafe.Alignof(z) == 0 {
			return unsafe.Slice((*T)(p), n), nil
		}
	}
	return nil, viewError[T](&s, per)
}

// viewError says why View refused s (ViewOf's slow path).
func viewError[T any](s *Stream, per uint32) error {
	var z T
	size := uint64(unsafe.Sizeof(z))
	n := uint64(s.Count) * uint64(per)
	switch {
	case uint64(s.Stride) != uint64(per)*size:
		return fmt.Errorf("stride %d bytes, want %d (%d x %d)", s.Stride, uint64(per)*size, per, size)
	case s.Bytes == nil:
		return fmt.Errorf("no host memory (device buffer %d only): the CPU kernel cannot run", s.Buffer)
	case uint64(len(s.Bytes)) < n*size:
		return fmt.Errorf("%d bytes, fewer than %d elements of %d", len(s.Bytes), n, size)
	case size == 0:
		return fmt.Errorf("%T has size 0", z)
	default:
		return fmt.Errorf("memory at %p is not %d-byte aligned", unsafe.SliceData(s.Bytes), unsafe.Alignof(z))
	}
}
