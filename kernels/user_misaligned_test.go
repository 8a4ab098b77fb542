package kernels_test

import (
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// TestUserMisalignedStreams: a stream whose memory starts one byte into a
// buffer is refused naming the stream and the alignment, for every kind of
// kernel (input and output).
func TestUserMisalignedStreams(t *testing.T) {
	s := userSched(t)
	raw := make([]byte, 4*1024+8)
	mis := func(n int) sched.Stream { return sched.Stream{Bytes: raw[1 : 1+4*n], Stride: 4, Count: uint32(n)} }
	x := make([]float32, 256)
	for _, k := range []sched.KernelID{kernels.Saxpy, kernels.SumF32, kernels.MinMaxF32, kernels.ExpandLerp, kernels.ScanReduceU32, kernels.CRC32CBlocks} {
		var tk sched.Task
		tk.Kernel = k
		switch k {
		case kernels.Saxpy:
			tk.Data.Elements = 256
			tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = mis(256), sched.StreamOf(x), sched.StreamOf(make([]float32, 256))
		case kernels.SumF32, kernels.MinMaxF32, kernels.ScanReduceU32:
			tk.Data.Elements = 1
			tk.Data.In[0], tk.Data.Out[0] = mis(256), sched.StreamOf(make([]float32, 2))
			tk.Data.Out[0].Count = 1
			if k == kernels.MinMaxF32 {
				tk.Data.Out[0] = sched.StreamOf(make([]kernels.MinMax, 1))
			}
		case kernels.ExpandLerp:
			tk.Data.Elements = 1
			tk.Data.In[0] = sched.StreamOf(make([]kernels.Segment, 1))
			tk.Data.Out[0] = mis(8)
		case kernels.CRC32CBlocks:
			tk.Data.Elements = 1
			tk.Data.In[0], tk.Data.Out[0] = mis(1024), sched.StreamOf(make([]uint32, 1))
		}
		err := run(s, &tk)
		if err == nil || !strings.Contains(err.Error(), "stream 0") || !strings.Contains(err.Error(), "aligned") {
			t.Errorf("kernel %d with a misaligned stream: %v", k, err)
		}
	}
}
