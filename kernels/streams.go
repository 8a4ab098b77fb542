package kernels

import (
	"fmt"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// hostSlice returns stream s as a []T of s.Count*per elements, where each
// stream element is per consecutive T values (per = 1 for most streams). It
// fails, without panicking, when the stream has no host bytes (a
// device-only buffer), a stride that is not per*sizeof(T), too few bytes, or
// memory misaligned for T. Only the error paths allocate.
func hostSlice[T any](s *sched.Stream, dir string, i int, per uint32) ([]T, error) {
	var z T
	size := uint64(unsafe.Sizeof(z))
	if uint64(s.Stride) != uint64(per)*size {
		return nil, fmt.Errorf("%s stream %d: stride %d bytes, want %d (%d x %d)", dir, i, s.Stride, uint64(per)*size, per, size)
	}
	n := uint64(s.Count) * uint64(per)
	if n == 0 {
		return nil, nil
	}
	if s.Bytes == nil {
		return nil, fmt.Errorf("%s stream %d: no host memory (device buffer %d only): the CPU kernel cannot run", dir, i, s.Buffer)
	}
	if uint64(len(s.Bytes)) < n*size {
		return nil, fmt.Errorf("%s stream %d: %d bytes, fewer than %d elements of %d", dir, i, len(s.Bytes), n, size)
	}
	p := unsafe.Pointer(unsafe.SliceData(s.Bytes))
	if uintptr(p)%unsafe.Alignof(z) != 0 {
		return nil, fmt.Errorf("%s stream %d: memory at %p is not %d-byte aligned", dir, i, p, unsafe.Alignof(z))
	}
	return unsafe.Slice((*T)(p), n), nil
}

// inSlice and outSlice are hostSlice for TaskData.In[i] and Out[i].
func inSlice[T any](d *sched.TaskData, i int, per uint32) ([]T, error) {
	return hostSlice[T](&d.In[i], "input", i, per)
}

func outSlice[T any](d *sched.TaskData, i int, per uint32) ([]T, error) {
	return hostSlice[T](&d.Out[i], "output", i, per)
}

// needLen fails when a stream of n elements is too short for need elements.
func needLen(dir string, i int, n int, need uint64, why string) error {
	if uint64(n) < need {
		return fmt.Errorf("%s stream %d: %d elements, %s needs %d", dir, i, n, why, need)
	}
	return nil
}

// validCount returns the number of valid input elements of a Reduce kernel:
// Params[0] when set, else all, clipped to elements*factor.
func validCount(d *sched.TaskData, factor uint64) uint64 {
	all := uint64(d.Elements) * factor
	if n := uint64(d.Params[0]); n != 0 && n < all {
		return n
	}
	return all
}
