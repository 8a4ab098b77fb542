//go:build linux

package pinning

import (
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestSchedulerWorkersPinned installs the Pinner as the scheduler's real
// worker-start hook and checks, from inside kernels running on the workers,
// that each worker thread is pinned to its planned CPU.
func TestSchedulerWorkersPinned(t *testing.T) {
	topo := Discover()
	plan := Plan(topo, 2)
	if len(plan) == 0 {
		t.Fatal("empty plan")
	}
	pinner := NewPinner(plan)
	reg := sched.NewRegistry()
	type seen struct {
		worker int
		set    CPUSet
	}
	ch := make(chan seen, 2)
	const k sched.KernelID = 1
	block := make(chan struct{})
	if err := reg.Register(k, sched.Kernel{Name: "where", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		set, err := ThreadCPUs()
		if err != nil {
			return err
		}
		ch <- seen{c.Index(), set}
		<-block // hold this worker so the other task lands on the other one
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 2, OnWorkerStart: pinner.OnWorkerStart})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Add(&sched.Task{Kernel: k})
	b, _ := s.Add(&sched.Task{Kernel: k})
	got := map[int]CPUSet{}
	for range 2 { // both workers are blocked in the kernel: one task each
		v := <-ch
		got[v.worker] = v.set
	}
	close(block)
	if err := s.Wait(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pinner.Err(); err != nil {
		t.Fatal(err)
	}
	if pinner.Pinned() != 2 {
		t.Fatalf("%d workers pinned, want 2", pinner.Pinned())
	}
	for w, set := range got {
		if set.Count() != 1 || !set.Has(plan[w%len(plan)]) {
			t.Fatalf("worker %d runs on CPUs %v, want only CPU %d", w, set, plan[w%len(plan)])
		}
	}
}
