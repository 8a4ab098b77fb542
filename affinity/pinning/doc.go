// Package pinning is the operating system's side of where work runs: the
// CPUs this process may use, how they share physical cores, and pinning
// threads (a scheduler's workers, a render thread) to them. It depends on
// package sched only for the worker-start hook.
//
// # Topology
//
// Discover reads the logical CPUs this process may use and how they share
// physical cores: the allowed set is the process's affinity mask
// (sched_getaffinity, read at start-up), which reflects taskset, cgroup
// cpusets and container limits; NumCPU is not used, because a container
// may see 64 CPUs and be allowed 3 of them. Cores come from sysfs
// (/sys/devices/system/cpu/cpuN/topology: core_cpus_list or
// thread_siblings_list, physical_package_id); without them each CPU counts
// as its own core, and Topology.Source says so. The cgroup CPU quota
// (cpu.max, or cfs_quota_us) is reported as Topology.Quota: a container
// limited to 1.5 CPUs sees every allowed CPU but should size its worker
// pool by the quota.
//
// CPU sets are CPUSet, a bit set of any length: unix.CPUSet holds 1024
// CPUs and silently ignores larger IDs; CPUSet.ToUnix refuses such a set
// with ErrCPUSetTooLarge instead of truncating it, and this package's
// system calls pass the kernel a mask as long as it needs (it retries
// sched_getaffinity with a doubled buffer while the kernel says EINVAL).
//
// # Pinning
//
// Pinning is off unless asked for. It acts on an OS thread, so it is only
// meaningful for a goroutine locked to its thread with
// runtime.LockOSThread: an unlocked goroutine moves
// between threads, and a pinned thread left to the Go scheduler runs
// arbitrary goroutines on one CPU. PinCurrentThread(cpu) pins the calling
// thread and fails (ErrNotAllowed) for a CPU outside the allowed set;
// LockAndPin locks, pins, and returns a function that restores the mask
// and unlocks. Plan(topo, workers) lists a CPU per worker, one per
// physical core first, then the SMT siblings. A Pinner applies a plan from
// the scheduler's worker-start hook (sched.Config.OnWorkerStart): it locks
// each goroutine that serves a worker (a worker is served by one goroutine
// at a time, but a kernel's wait can hand it to another: each calls the
// hook) for that goroutine's whole life, so a pinned thread exits with its
// goroutine and never serves other goroutines.
package pinning
