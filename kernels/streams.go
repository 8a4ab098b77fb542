package kernels

import (
	"fmt"

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
