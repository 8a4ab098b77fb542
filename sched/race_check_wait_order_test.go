package sched

import (
	"testing"
	"time"
)

// A kernel's Wait for a task it adds without a parent does not order the
// two for Config.CheckRaces (the doc's "Checked runs"): the task is
// compared with the kernel's own streams at Add, so one writing what the
// kernel reads is refused even though the kernel would wait for it, and
// never runs; one over other memory is added, waited for and runs.
func TestRaceCheckKernelWaitDoesNotOrder(t *testing.T) {
	within(t, 20*time.Second, "kernel's Wait for a parentless task", func() {
		e := rvSched(t, Config{Workers: 2})
		y, z, w := make([]byte, 32), make([]byte, 32), make([]byte, 16)
		var bad, good error
		pt := cp(y, z, NoTask)
		pt.Data.Data = &rvHook{func(c *Ctx, _ *TaskData) error {
			id, err := c.Add(cp(nil, y[4:8], NoTask))
			bad = err
			if err == nil {
				c.Wait(id)
			}
			id, good = c.Add(cp(nil, w, NoTask))
			if good == nil {
				good = c.Wait(id)
			}
			return nil
		}}
		p, err := e.s.Add(pt)
		must(t, err)
		must(t, e.s.Wait(p))
		re := wantRace(t, bad, "a parentless task writing its adding kernel's input")
		if re.Other != p || re.OtherStream != "in[0] src" || re.Task != NoTask {
			t.Errorf("race %+v: want the refused task (NoTask) against the adding kernel's in[0]", re)
		}
		must(t, good)
		if n := e.ran.Load(); n != 2 {
			t.Errorf("%d kernels ran, want 2 (the adding kernel and the task over other memory)", n)
		}
	})
}
