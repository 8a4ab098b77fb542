package kernels

import (
	"fmt"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// inSlice and outSlice are sched.ViewOf for TaskData.In[i] and Out[i], with
// errors naming the stream.
func inSlice[T any](d *sched.TaskData, i int, per uint32) ([]T, error) {
	v, err := sched.ViewOf[T](d.In[i], per)
	if err != nil {
		return nil, fmt.Errorf("input stream %d: %w", i, err)
	}
	return v, nil
}

func outSlice[T any](d *sched.TaskData, i int, per uint32) ([]T, error) {
	v, err := sched.ViewOf[T](d.Out[i], per)
	if err != nil {
		return nil, fmt.Errorf("output stream %d: %w", i, err)
	}
	return v, nil
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

// hostRange returns the host bytes a stream declares (Count x Stride,
// clipped to its memory) as [lo, hi) addresses; lo == hi when it has none.
func hostRange(s *sched.Stream) (lo, hi uintptr) {
	n := min(uint64(s.Count)*uint64(s.Stride), uint64(len(s.Bytes)))
	if n == 0 {
		return 0, 0
	}
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(s.Bytes)))
	return lo, lo + uintptr(n)
}

// checkAliasing refuses a task whose output stream shares host memory with
// one of its input streams or with another output stream (LocalToModelSkin
// reads the model matrices it wrote for a bone's parent, so a skin stream
// over the model stream would feed palettes to the children). The kernels read inputs and write outputs in
// chunks (the assembly loops in blocks of 8 to 256 elements, the scheduler
// in ranges that run at the same time), so an output that overlaps an input
// at another offset would be read after it was written, by some paths and
// some splits and not others: a silently wrong answer that depends on the
// machine. Refusing is the only answer that is the same everywhere.
// inPlace kernels (Saxpy) compute element i from element i of each input
// only, so an output that is exactly an input (same start, same length) is
// allowed for them: every chunk reads its elements before it writes them.
func checkAliasing(d *sched.TaskData, inPlace bool) error {
	for o := range d.Out {
		olo, ohi := hostRange(&d.Out[o])
		if olo == ohi {
			continue
		}
		for i := range d.In {
			ilo, ihi := hostRange(&d.In[i])
			if ilo == ihi || ohi <= ilo || ihi <= olo {
				continue
			}
			if inPlace && olo == ilo && ohi == ihi {
				continue
			}
			what := "outputs may not share memory with inputs"
			if inPlace {
				what = "an output may be an input itself (the same bytes), never overlap one at another offset or length"
			}
			return fmt.Errorf("output stream %d (bytes [%#x, %#x)) overlaps input stream %d (bytes [%#x, %#x)): %s", o, olo, ohi, i, ilo, ihi, what)
		}
		for j := o + 1; j < len(d.Out); j++ {
			if jlo, jhi := hostRange(&d.Out[j]); jlo != jhi && olo < jhi && jlo < ohi {
				return fmt.Errorf("output stream %d (bytes [%#x, %#x)) overlaps output stream %d (bytes [%#x, %#x)): outputs may not share memory", o, olo, ohi, j, jlo, jhi)
			}
		}
	}
	return nil
}

// sliceOverlap reports whether two slices' elements share any byte.
func sliceOverlap[A, B any](a []A, b []B) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	alo := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	blo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	ahi := alo + uintptr(len(a))*unsafe.Sizeof(a[0])
	bhi := blo + uintptr(len(b))*unsafe.Sizeof(b[0])
	return alo < bhi && blo < ahi
}

// noAliasing wraps a kernel's CPU function with checkAliasing.
func noAliasing(f sched.KernelFunc, inPlace bool) sched.KernelFunc {
	return func(c *sched.Ctx, d *sched.TaskData) error {
		if err := checkAliasing(d, inPlace); err != nil {
			return err
		}
		return f(c, d)
	}
}
