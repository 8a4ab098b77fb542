package pinning

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

// smtTopology is a hand-built topology of cores cores with two threads
// each, siblings n and n+cores.
func smtTopology(cores int) *Topology {
	t := &Topology{}
	for c := range cores {
		t.Cores = append(t.Cores, Core{CPUs: []int{c, c + cores}})
	}
	for id := range 2 * cores {
		t.CPUs = append(t.CPUs, CPU{ID: id, Core: id % cores})
	}
	return t
}

// TestPlanClampsHugeWorkerCounts: a worker count beyond MaxPlanWorkers
// gives a plan of whole rounds over the CPUs, no longer than the bound
// (or one round where there are more CPUs, and no more than the workers
// asked for), and indexing it modulo its length gives every worker the
// CPU of the unclamped plan; counts up to the bound are not clamped.
func TestPlanClampsHugeWorkerCounts(t *testing.T) {
	// More CPUs than MaxPlanWorkers: a hand-built topology of single
	// CPUs (Plan treats each as its own core).
	many := &Topology{}
	for id := range MaxPlanWorkers + 3 {
		many.CPUs = append(many.CPUs, CPU{ID: id})
	}
	for _, topo := range []*Topology{smtTopology(1), smtTopology(3), smtTopology(7), many} {
		order := Plan(topo, 0)
		name := fmt.Sprintf("%d CPUs", len(order))
		clamped := MaxPlanWorkers / len(order) * len(order)
		if len(order) > MaxPlanWorkers {
			clamped = len(order)
		}
		for _, workers := range []int{MaxPlanWorkers + 1, math.MaxInt / 3, math.MaxInt} {
			wantLen := min(workers, clamped)
			plan := Plan(topo, workers)
			if len(plan) != wantLen {
				t.Fatalf("%s: Plan(%d workers) has %d CPUs, want %d", name, workers, len(plan), wantLen)
			}
			for _, i := range []int{0, 1, len(order) - 1, len(order), wantLen - 1, wantLen, MaxPlanWorkers, math.MaxInt/3 + 5, workers - 1} {
				if i >= workers {
					continue // no such worker
				}
				if got, want := plan[i%len(plan)], order[i%len(order)]; got != want {
					t.Fatalf("%s, %d workers: worker %d gets CPU %d, want %d", name, workers, i, got, want)
				}
			}
		}
		if len(order) <= MaxPlanWorkers {
			plan := Plan(topo, MaxPlanWorkers)
			if len(plan) != MaxPlanWorkers {
				t.Fatalf("%s: Plan(MaxPlanWorkers) has %d CPUs, want %d", name, len(plan), MaxPlanWorkers)
			}
			for i, cpu := range plan {
				if cpu != order[i%len(order)] {
					t.Fatalf("%s: Plan(MaxPlanWorkers)[%d] = %d, want %d", name, i, cpu, order[i%len(order)])
				}
			}
		}
	}
}

// TestSiblingsReturnsACopy: modifying the slice Siblings returns leaves
// the topology, its later answers and Plan unchanged.
func TestSiblingsReturnsACopy(t *testing.T) {
	topo := smtTopology(2)
	before := Plan(topo, 0)
	sib := topo.Siblings(3)
	if !reflect.DeepEqual(sib, []int{1, 3}) {
		t.Fatalf("Siblings(3) = %v, want [1 3]", sib)
	}
	sib[0], sib[1] = 99, 98
	sib = append(sib[:0], 7)
	_ = sib
	if got := topo.Siblings(1); !reflect.DeepEqual(got, []int{1, 3}) {
		t.Fatalf("Siblings(1) after the caller changed an earlier result = %v, want [1 3]", got)
	}
	if !reflect.DeepEqual(topo.Cores[1].CPUs, []int{1, 3}) {
		t.Fatalf("Cores[1].CPUs = %v after the caller changed Siblings' result", topo.Cores[1].CPUs)
	}
	if after := Plan(topo, 0); !reflect.DeepEqual(after, before) {
		t.Fatalf("Plan = %v after the caller changed Siblings' result, was %v", after, before)
	}
	if got := topo.Siblings(4); got != nil {
		t.Fatalf("Siblings of a CPU not in the topology = %v, want nil", got)
	}
}
