package kernels_test

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// Register the kernels, then run saxpy (y = 2x + y, in place) and the
// average of every 32 elements through a scheduler.
func Example() {
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
		fmt.Println(err)
		return
	}
	s, err := sched.New(sched.Config{Kernels: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	x := make([]float32, 64)
	y := make([]float32, 64)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	var t sched.Task
	t.Kernel = kernels.Saxpy
	t.Data.Elements = uint32(len(x))
	t.Data.Params[0] = math.Float32bits(2)
	t.Data.In[0] = sched.StreamOf(x)
	t.Data.In[1] = sched.StreamOf(y)
	t.Data.Out[0] = sched.StreamOf(y)
	id, err := s.Add(&t)
	if err == nil {
		err = s.Wait(id)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("saxpy:", y[:4], y[63])

	avg := make([]float32, len(y)/32)
	t = sched.Task{Kernel: kernels.Avg32F32}
	t.Data.Elements = uint32(len(avg)) // outputs: Reduce work items
	t.Data.In[0] = sched.StreamOf(y)   // 32 inputs per output
	t.Data.Out[0] = sched.StreamOf(avg)
	id, err = s.Add(&t)
	if err == nil {
		err = s.Wait(id)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("avg32:", avg)
	// Output:
	// saxpy: [1 3 5 7] 127
	// avg32: [32 96]
}
