package pinning

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

func TestCPUListRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in, want string
		count    int
	}{
		{"", "", 0},
		{"0", "0", 1},
		{"0-3", "0-3", 4},
		{" 0-1,3, 5-6\n", "0-1,3,5-6", 5},
		{"7,6,5,0", "0,5-7", 4},
		{"63-65", "63-65", 3},                   // crosses a word
		{"1023-1025,4095", "1023-1025,4095", 4}, // beyond unix.CPUSet's 1024 bits
	} {
		s, err := ParseCPUList(c.in)
		if err != nil {
			t.Fatalf("ParseCPUList(%q): %v", c.in, err)
		}
		if got := s.String(); got != c.want || s.Count() != c.count {
			t.Errorf("ParseCPUList(%q) = %q (%d CPUs), want %q (%d)", c.in, got, s.Count(), c.want, c.count)
		}
		back, err := ParseCPUList(s.String())
		if err != nil || !back.Equal(s) {
			t.Errorf("round trip of %q: %v %v", c.in, back, err)
		}
	}
	for _, bad := range []string{"x", "1-", "-1", "3-1", "0-7:2", "99999999", "1,,2"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) accepted", bad)
		}
	}
}

func TestCPUSetOps(t *testing.T) {
	var s CPUSet
	if s.Max() != -1 || s.Count() != 0 || s.Has(0) || s.Has(-1) {
		t.Fatal("zero CPUSet is not empty")
	}
	s.Add(5000)
	s.Add(3)
	if !s.Has(5000) || !s.Has(3) || s.Has(4) || s.Max() != 5000 {
		t.Fatalf("set %v", s)
	}
	c := s.Clone()
	s.Remove(5000)
	if s.Has(5000) || !c.Has(5000) {
		t.Fatal("Clone shares words")
	}
	if got := c.And(s).CPUs(); !reflect.DeepEqual(got, []int{3}) {
		t.Fatalf("And = %v", got)
	}
	if !s.Equal(CPUSet{w: []uint{8, 0, 0}}) {
		t.Fatal("Equal ignores trailing zero words wrongly")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Add(-1) did not panic")
		}
	}()
	s.Add(-1)
}

// sysfs builds a synthetic /sys/devices/system/cpu tree: cpus maps a CPU
// ID to (package, core_id, siblings list).
func sysfs(online string, cpus map[int][3]string) fstest.MapFS {
	fs := fstest.MapFS{}
	if online != "" {
		fs["online"] = &fstest.MapFile{Data: []byte(online + "\n")}
	}
	for id, v := range cpus {
		dir := fmt.Sprintf("cpu%d/topology/", id)
		if v[0] != "" {
			fs[dir+"physical_package_id"] = &fstest.MapFile{Data: []byte(v[0] + "\n")}
		}
		if v[1] != "" {
			fs[dir+"core_id"] = &fstest.MapFile{Data: []byte(v[1] + "\n")}
		}
		if v[2] != "" {
			fs[dir+"thread_siblings_list"] = &fstest.MapFile{Data: []byte(v[2] + "\n")}
		}
	}
	return fs
}

func TestDiscoverSMT(t *testing.T) {
	// Two packages of two cores with two threads each, numbered the way
	// Intel machines do: siblings are n and n+4.
	cpus := map[int][3]string{}
	for id := range 8 {
		core := id % 4
		pkg := core / 2
		cpus[id] = [3]string{fmt.Sprint(pkg), fmt.Sprint(core % 2), fmt.Sprintf("%d,%d", core, core+4)}
	}
	topo := DiscoverFS(sysfs("0-7", cpus), CPUSet{})
	if topo.Source != "sysfs" || topo.NumCPU() != 8 || topo.NumCores() != 4 {
		t.Fatalf("topology: %v", topo)
	}
	if got := topo.Siblings(5); !reflect.DeepEqual(got, []int{1, 5}) {
		t.Fatalf("Siblings(5) = %v", got)
	}
	// Cores first (package 0's, then package 1's), then the siblings.
	if got := Plan(topo, 0); !reflect.DeepEqual(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("Plan(all) = %v", got)
	}
	if got := Plan(topo, 3); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Fatalf("Plan(3) = %v: want one CPU per physical core", got)
	}
	if got := Plan(topo, 10); !reflect.DeepEqual(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 0, 1}) {
		t.Fatalf("Plan(10) = %v", got)
	}

	// A container allowed only CPUs 1, 5 (one core) and 6.
	allowed, _ := ParseCPUList("1,5,6")
	topo = DiscoverFS(sysfs("0-7", cpus), allowed)
	if topo.NumCPU() != 3 || topo.NumCores() != 2 || topo.Allowed.String() != "1,5-6" {
		t.Fatalf("restricted topology: %v", topo)
	}
	if got := Plan(topo, 0); !reflect.DeepEqual(got, []int{1, 6, 5}) {
		t.Fatalf("restricted Plan = %v, want cores first [1 6 5]", got)
	}
}

func TestDiscoverLargeMachine(t *testing.T) {
	// 2048 CPUs without SMT (IDs beyond unix.CPUSet's 1024 bits); the
	// process may use a sparse set reaching ID 2047.
	cpus := map[int][3]string{}
	for id := range 2048 {
		cpus[id] = [3]string{fmt.Sprint(id / 1024), fmt.Sprint(id % 1024), fmt.Sprint(id)}
	}
	allowed, _ := ParseCPUList("0,1000-1100,2047")
	topo := DiscoverFS(sysfs("0-2047", cpus), allowed)
	if topo.NumCPU() != 103 || topo.NumCores() != 103 || topo.CPUs[102].ID != 2047 || topo.CPUs[102].Package != 1 {
		t.Fatalf("topology of a large machine: %v, last %+v", topo, topo.CPUs[len(topo.CPUs)-1])
	}
	plan := Plan(topo, 103)
	if plan[102] != 2047 {
		t.Fatalf("Plan's last worker %d, want CPU 2047", plan[102])
	}
}

func TestDiscoverFallbacks(t *testing.T) {
	// No sysfs at all: runtime.NumCPU single-thread cores.
	topo := DiscoverFS(fstest.MapFS{}, CPUSet{})
	if !strings.HasPrefix(topo.Source, "fallback") || topo.NumCPU() != runtime.NumCPU() || topo.NumCores() != topo.NumCPU() {
		t.Fatalf("no sysfs: %v", topo)
	}
	// No sysfs, but an allowed mask: trust the mask.
	allowed, _ := ParseCPUList("2,3,9")
	topo = DiscoverFS(fstest.MapFS{}, allowed)
	if topo.NumCPU() != 3 || topo.CPUs[2].ID != 9 {
		t.Fatalf("no sysfs, mask 2,3,9: %v", topo)
	}
	// No "online" file: CPU directories are listed; missing topology
	// files make each CPU its own core.
	fs := sysfs("", map[int][3]string{0: {"0", "0", "0-1"}, 1: {"0", "0", "0-1"}, 2: {}})
	fs["cpu2/online"] = &fstest.MapFile{Data: []byte("1\n")}
	fs["cpufreq"] = &fstest.MapFile{Mode: 0o755 | 1<<31} // a directory that is not a CPU
	topo = DiscoverFS(fs, CPUSet{})
	if topo.NumCPU() != 3 || topo.NumCores() != 2 || !strings.Contains(topo.Source, "partial") {
		t.Fatalf("partial sysfs: %v %+v", topo, topo.Cores)
	}
	// Garbage in a file degrades, never fails.
	fs = sysfs("0-1", map[int][3]string{0: {"x", "y", "z"}, 1: {"0", "1", "1"}})
	if topo = DiscoverFS(fs, CPUSet{}); topo.NumCPU() != 2 {
		t.Fatalf("garbage sysfs: %v", topo)
	}
	if Plan(&Topology{}, 4) != nil || Plan(nil, 1) != nil {
		t.Fatal("Plan of an empty topology")
	}
}

func TestCgroupQuota(t *testing.T) {
	for _, c := range []struct {
		fs   fstest.MapFS
		want float64
	}{
		{fstest.MapFS{"cpu.max": {Data: []byte("150000 100000\n")}}, 1.5},
		{fstest.MapFS{"cpu.max": {Data: []byte("max 100000\n")}}, 0},
		{fstest.MapFS{"cpu/cpu.cfs_quota_us": {Data: []byte("200000\n")}, "cpu/cpu.cfs_period_us": {Data: []byte("100000\n")}}, 2},
		{fstest.MapFS{"cpu/cpu.cfs_quota_us": {Data: []byte("-1\n")}, "cpu/cpu.cfs_period_us": {Data: []byte("100000\n")}}, 0},
		{fstest.MapFS{}, 0},
	} {
		if got := cgroupQuota(c.fs); got != c.want {
			t.Errorf("cgroupQuota = %v, want %v", got, c.want)
		}
	}
}

// TestDiscoverHere checks the real machine: every allowed CPU appears once
// and the allowed set is the process's affinity mask.
func TestDiscoverHere(t *testing.T) {
	topo := Discover()
	t.Logf("this machine: %v", topo)
	if topo.NumCPU() == 0 || topo.NumCores() == 0 || topo.NumCores() > topo.NumCPU() {
		t.Fatalf("topology %v", topo)
	}
	if !pinSupported {
		return
	}
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if !topo.Allowed.Equal(allowed) || topo.Source != "sysfs" {
		t.Fatalf("Discover's allowed set %v (%s), AllowedCPUs %v", topo.Allowed, topo.Source, allowed)
	}
	seen := map[int]bool{}
	for _, c := range topo.CPUs {
		if seen[c.ID] || !allowed.Has(c.ID) {
			t.Fatalf("CPU %d listed twice or not allowed", c.ID)
		}
		seen[c.ID] = true
	}
}
