package pinning_test

import (
	"fmt"
	"testing/fstest"

	"github.com/vkjobs/vkjobs/affinity/pinning"
)

// Spreading workers over physical cores first, on a machine of two cores
// with two hardware threads each (described here by a synthetic sysfs;
// pinning.Discover reads the real one).
func ExamplePlan() {
	sys := fstest.MapFS{"online": {Data: []byte("0-3")}}
	for cpu, sib := range []string{"0,2", "1,3", "0,2", "1,3"} {
		sys[fmt.Sprintf("cpu%d/topology/thread_siblings_list", cpu)] = &fstest.MapFile{Data: []byte(sib)}
		sys[fmt.Sprintf("cpu%d/topology/physical_package_id", cpu)] = &fstest.MapFile{Data: []byte("0")}
	}
	topo := pinning.DiscoverFS(sys, pinning.CPUSet{})
	fmt.Println(topo.NumCPU(), "CPUs,", topo.NumCores(), "cores")
	fmt.Println("2 workers:", pinning.Plan(topo, 2)) // one per core
	fmt.Println("4 workers:", pinning.Plan(topo, 4)) // then the siblings
	// Output:
	// 4 CPUs, 2 cores
	// 2 workers: [0 1]
	// 4 workers: [0 1 2 3]
}
