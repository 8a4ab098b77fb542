package pinning

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// CPU is one logical CPU (a hardware thread) the process may run on.
type CPU struct {
	ID      int // the OS's logical CPU number
	Core    int // index into Topology.Cores
	Package int // physical package (socket) ID as the OS reports it; 0 if unknown
}

// Core is one physical core: its package and the logical CPUs (SMT
// siblings) of it that the process may use, in increasing order.
type Core struct {
	Package int
	CPUs    []int
}

// Topology describes the logical CPUs this process may use and how they
// share physical cores. Only CPUs in the process's allowed set appear (a
// container or taskset may restrict it), so len(CPUs) can be smaller than
// the machine's CPU count and the IDs need not be contiguous.
type Topology struct {
	CPUs  []CPU  // allowed logical CPUs, by increasing ID
	Cores []Core // physical cores with at least one allowed CPU, by package, then lowest CPU ID
	// Allowed is the process's allowed CPU set (sched_getaffinity), or
	// every online CPU when that is unknown.
	Allowed CPUSet
	// Source says where the description came from: "sysfs", or "fallback:
	// <reason>" when the OS gave no topology and each CPU counts as its
	// own core.
	Source string
	// Quota is the CPU time the process's cgroup allows, in CPUs (cgroup v2
	// cpu.max or v1 cfs_quota_us/cfs_period_us); 0 when unlimited or
	// unknown. A container limited to 1.5 CPUs on a 64-CPU host sees 64
	// allowed CPUs and Quota 1.5: size worker pools by the smaller.
	Quota float64
}

// NumCPU returns the number of allowed logical CPUs.
func (t *Topology) NumCPU() int { return len(t.CPUs) }

// NumCores returns the number of physical cores with an allowed CPU.
func (t *Topology) NumCores() int { return len(t.Cores) }

// Siblings returns the allowed logical CPUs that share cpu's core (cpu
// included), or nil when cpu is not an allowed CPU. The slice is a copy
// the caller may keep and modify: handing out Core.CPUs itself would let an
// edit through the result reorder or rename the topology's CPUs under
// Plan. The copy is a small allocation in a lookup that already scans
// every CPU; it is meant for start-up decisions, like Discover, not for a
// per-task path.
func (t *Topology) Siblings(cpu int) []int {
	for _, c := range t.CPUs {
		if c.ID == cpu {
			return slices.Clone(t.Cores[c.Core].CPUs)
		}
	}
	return nil
}

// String summarises the topology: "2 CPUs on 2 cores in 1 packages,
// allowed 0-1 (sysfs)", and the quota when there is one.
func (t *Topology) String() string {
	pk := map[int]bool{}
	for _, c := range t.Cores {
		pk[c.Package] = true
	}
	s := fmt.Sprintf("%d CPUs on %d cores in %d packages, allowed %s (%s)", len(t.CPUs), len(t.Cores), len(pk), t.Allowed, t.Source)
	if t.Quota > 0 {
		s += fmt.Sprintf(", quota %.2f CPUs", t.Quota)
	}
	return s
}

// SysfsCPU is where Linux describes CPUs.
const SysfsCPU = "/sys/devices/system/cpu"

// Discover describes the CPUs this process may use, from sysfs and the
// process's affinity mask (Linux), falling back to runtime.NumCPU CPUs
// that each count as a core when the OS gives no topology. It never fails:
// Source says how much it knew. It reads a few small files per CPU; call it
// once at start-up, not per frame.
func Discover() *Topology {
	allowed, err := AllowedCPUs()
	if err != nil {
		allowed = CPUSet{}
	}
	t := DiscoverFS(os.DirFS(SysfsCPU), allowed)
	t.Quota = cgroupQuota(os.DirFS("/sys/fs/cgroup"))
	return t
}

// DiscoverFS is Discover over fsys, a tree laid out like
// /sys/devices/system/cpu (files "online", "cpuN/topology/core_id",
// "physical_package_id", "thread_siblings_list" or "core_cpus_list"), and
// the allowed set; an empty allowed set means every online CPU. Missing or
// malformed files degrade the description (see Topology.Source) rather than
// fail. It exists for tests with synthetic machines (more than 1024 CPUs,
// holes in the numbering, no sysfs at all).
func DiscoverFS(fsys fs.FS, allowed CPUSet) *Topology {
	t := &Topology{Source: "sysfs"}
	online, err := readList(fsys, "online")
	if err != nil {
		online, err = listCPUDirs(fsys)
	}
	if err != nil || online.Count() == 0 {
		return fallback(allowed, "no CPU list in sysfs")
	}
	use := online
	if allowed.Count() > 0 {
		use = online.And(allowed)
		if use.Count() == 0 {
			// Allowed CPUs that sysfs does not list: trust the mask.
			return fallback(allowed, "allowed CPUs are not online in sysfs")
		}
	}
	t.Allowed = use
	type key struct{ pkg, core int }
	coreIdx := map[key]int{}
	partial := false
	for _, id := range use.CPUs() {
		dir := "cpu" + strconv.Itoa(id) + "/topology/"
		pkg, err1 := readInt(fsys, dir+"physical_package_id")
		if err1 != nil || pkg < 0 {
			pkg = 0
		}
		// A core is identified by its lowest sibling: core_id alone
		// repeats across packages and dies.
		core := -1
		for _, f := range []string{"core_cpus_list", "thread_siblings_list"} {
			if sib, err := readList(fsys, dir+f); err == nil && sib.Has(id) {
				core = sib.CPUs()[0]
				break
			}
		}
		if core < 0 {
			if cid, err := readInt(fsys, dir+"core_id"); err == nil && err1 == nil {
				core = -2 - cid // distinct from sibling-based keys
			} else {
				core = id
				partial = true
			}
		}
		k := key{pkg, core}
		ci, ok := coreIdx[k]
		if !ok {
			ci = len(t.Cores)
			coreIdx[k] = ci
			t.Cores = append(t.Cores, Core{Package: pkg})
		}
		t.Cores[ci].CPUs = append(t.Cores[ci].CPUs, id)
		t.CPUs = append(t.CPUs, CPU{ID: id, Core: ci, Package: pkg})
	}
	if partial {
		t.Source = "sysfs (partial: some CPUs without topology count as their own core)"
	}
	t.sortCores()
	return t
}

// fallback describes allowed (or 0..NumCPU-1) as one package of
// single-thread cores.
func fallback(allowed CPUSet, why string) *Topology {
	t := &Topology{Source: "fallback: " + why}
	if allowed.Count() == 0 {
		for i := range runtime.NumCPU() {
			allowed.Add(i)
		}
	}
	t.Allowed = allowed
	for _, id := range allowed.CPUs() {
		t.CPUs = append(t.CPUs, CPU{ID: id, Core: len(t.Cores)})
		t.Cores = append(t.Cores, Core{CPUs: []int{id}})
	}
	return t
}

// sortCores orders cores by package, then lowest CPU, and renumbers.
func (t *Topology) sortCores() {
	order := make([]int, len(t.Cores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ca, cb := t.Cores[order[a]], t.Cores[order[b]]
		if ca.Package != cb.Package {
			return ca.Package < cb.Package
		}
		return ca.CPUs[0] < cb.CPUs[0]
	})
	newIdx := make([]int, len(order))
	cores := make([]Core, len(order))
	for n, o := range order {
		newIdx[o] = n
		cores[n] = t.Cores[o]
	}
	t.Cores = cores
	for i := range t.CPUs {
		t.CPUs[i].Core = newIdx[t.CPUs[i].Core]
	}
}

func readList(fsys fs.FS, name string) (CPUSet, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return CPUSet{}, err
	}
	return ParseCPUList(string(b))
}

func readInt(fsys fs.FS, name string) (int, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// listCPUDirs finds cpuN directories when "online" is missing.
func listCPUDirs(fsys fs.FS) (CPUSet, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return CPUSet{}, err
	}
	var s CPUSet
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), "cpu")
		if !ok || !e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(name); err == nil && n >= 0 && n <= MaxCPUID {
			s.Add(n)
		}
	}
	return s, nil
}

// cgroupQuota reads the CPU quota of the cgroup (v2 cpu.max "max 100000"
// or "150000 100000"; v1 cpu/cpu.cfs_quota_us and cfs_period_us), in
// CPUs; 0 when unlimited or unknown. It reads the cgroup mounted at the
// root, which inside a container is the container's own.
func cgroupQuota(fsys fs.FS) float64 {
	if b, err := fs.ReadFile(fsys, "cpu.max"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && q > 0 && p > 0 {
				return q / p
			}
		}
		return 0
	}
	q, err1 := readInt(fsys, "cpu/cpu.cfs_quota_us")
	p, err2 := readInt(fsys, "cpu/cpu.cfs_period_us")
	if err1 == nil && err2 == nil && q > 0 && p > 0 {
		return float64(q) / float64(p)
	}
	return 0
}

// MaxPlanWorkers bounds the length of the plan Plan returns (65536), or
// of one round over the CPUs where there are more. Plan allocates a slot
// per worker, so without a bound a huge count (a corrupt flag, an
// overflowed computation) would end the process in the allocation. No
// real pool comes near it: a pinned worker holds an OS thread of its own,
// and the Go runtime ends a program at 10000 threads unless
// debug.SetMaxThreads raises the limit.
const MaxPlanWorkers = 1 << 16

// Plan returns a CPU for each of workers threads, spreading them over
// physical cores first: the first CPU of every core (cores ordered by
// package, then CPU ID), then the second SMT sibling of every core, and so
// on; with more workers than CPUs it wraps around. workers <= 0 means one
// per CPU. Worker i should be pinned to plan[i%len(plan)], as Pinner
// does: for more than MaxPlanWorkers workers (and CPUs) the plan is
// clamped to the whole number of wrap-arounds that fits MaxPlanWorkers (or
// to one per CPU when there are more CPUs than that), and since the plan
// repeats with the CPUs, indexing it modulo its length gives every worker
// the CPU the unclamped plan would. Clamping rather than refusing keeps
// Plan infallible (its result has no error to carry a refusal), and the
// CPUs are the same either way.
//
// The plan uses the CPUs of t.Cores, so a program may keep cores for
// other threads (a render thread) by dropping them from a copy of the
// topology's Cores; a topology without cores (built by hand) plans over
// t.CPUs, each its own core. An empty topology gives nil.
func Plan(t *Topology, workers int) []int {
	if t == nil {
		return nil
	}
	cores := t.Cores
	if len(cores) == 0 {
		for _, c := range t.CPUs {
			cores = append(cores, Core{Package: c.Package, CPUs: []int{c.ID}})
		}
	}
	// Round r takes the r-th sibling of every core that has one; the
	// rounds end with the largest core, whatever t.CPUs says.
	var order []int
	for round := 0; ; round++ {
		n := len(order)
		for _, c := range cores {
			if round < len(c.CPUs) {
				order = append(order, c.CPUs[round])
			}
		}
		if len(order) == n {
			break
		}
	}
	if len(order) == 0 {
		return nil
	}
	if workers <= 0 {
		workers = len(order)
	}
	if workers > MaxPlanWorkers {
		// Whole rounds only, so that the plan still repeats with order.
		workers = min(workers, max(len(order), MaxPlanWorkers/len(order)*len(order)))
	}
	plan := make([]int, workers)
	for i := range plan {
		plan[i] = order[i%len(order)]
	}
	return plan
}
