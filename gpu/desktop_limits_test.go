package gpu

import (
	"errors"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// desktopLimits gives dev the limits of a demanding desktop device (all
// within what lavapipe allows, so the validation layer still checks the
// commands against the real device): 256-byte binding alignments
// (minStorageBufferOffsetAlignment on some AMD and Intel parts,
// minUniformBufferOffsetAlignment on NVIDIA), few workgroups per dispatch
// (the executor must split), and a storage range of 2^27 bytes.
func desktopLimits(dev *Device) {
	dev.lim.storageAlign, dev.lim.uniformAlign = 256, 256
	dev.lim.maxGroupCount = 5
	dev.lim.maxStorageRange = min(dev.lim.maxStorageRange, 1<<27)
}

// TestDesktopLimits runs host streams, a uniform input and GPU-resident
// buffers at offsets under desktop limits, on unified and staged memory:
// the results match the CPU's, and an offset that lavapipe would accept
// but the forced alignment does not is refused, naming the alignment.
func TestDesktopLimits(t *testing.T) {
	for _, staging := range []bool{false, true} {
		dev := openTestDevice(t, Options{ForceStaging: staging})
		desktopLimits(dev)
		e := newEnv(t, dev, ExecutorOptions{}, sched.Config{})

		// Host streams over many chunks of maxGroupCount groups, with a
		// sub-range (the scheduler splits nothing here, but Begin > 0
		// exercises Arena.window's base alignment).
		const n = 100_003
		x, y := ramp(n, 1, 0), ramp(n, 2, 1)
		gz, cz := make([]float32, n), make([]float32, n)
		must(t, e.main.Wait(e.add(t, saxpyTask(1.5, x, y, gz))))
		c := saxpyTask(1.5, x, y, cz)
		c.Affinity = sched.AnyWorker
		must(t, e.main.Wait(e.add(t, c)))
		closeTo(t, "saxpy", gz, cz)

		// A uniform (Whole) input beside a storage one: two arena
		// windows, each at a 256-byte boundary.
		coef := [][4]float32{{2, -3, 0, 0}}
		pz, pc := make([]float32, 777), make([]float32, 777)
		px := ramp(777, 0.5, 0)
		pt := sched.Task{Kernel: kPoly, Affinity: sched.GPU}
		pt.Data.Elements = 777
		pt.Data.In[0], pt.Data.In[1], pt.Data.Out[0] = sched.StreamOf(px), sched.StreamOf(coef), sched.StreamOf(pz)
		must(t, e.main.Wait(e.add(t, pt)))
		pt.Affinity, pt.Data.Out[0] = sched.AnyWorker, sched.StreamOf(pc)
		must(t, e.main.Wait(e.add(t, pt)))
		closeTo(t, "poly", pz, pc)

		// GPU-resident buffers at offsets that are multiples of 256.
		const m = 1000
		buf, err := dev.NewBuffer(256 + 4*m + 256 + 4*m)
		must(t, err)
		must(t, buf.Write(256, sched.StreamOf(ramp(m, 1, 0)).Bytes))
		st := sched.Task{Kernel: kSpin, Affinity: sched.GPU}
		st.Data.Elements = m
		st.Data.Params[0] = 3
		st.Data.In[0] = buf.Stream(4, m, 256)
		outOff := uint64(256 + 4*m + 256 - (256+4*m)%256)
		st.Data.Out[0] = buf.Stream(4, m, outOff)
		must(t, e.main.Wait(e.add(t, st)))
		in, out := make([]uint32, m), make([]uint32, m)
		must(t, buf.Read(256, sched.StreamOf(in).Bytes))
		must(t, buf.Read(outOff, sched.StreamOf(out).Bytes))
		for i := range out {
			if want := lcg(in[i], 3); out[i] != want {
				t.Fatalf("staging %v: spin[%d] = %d, want %d", staging, i, out[i], want)
			}
		}

		// An offset of 16 suits lavapipe, not this device.
		st.Data.In[0] = buf.Stream(4, m, 16)
		err = e.main.Wait(e.add(t, st))
		if !errors.Is(err, ErrBadStream) {
			t.Errorf("staging %v: a stream at offset 16 with a 256-byte alignment: %v, want ErrBadStream", staging, err)
		}
		buf.Close()
		must(t, e.s.Close())
		must(t, dev.Close())
		if err := dev.ValidationErr(); err != nil {
			t.Errorf("staging %v: %v", staging, err)
		}
	}
}
