package kernels

import (
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// threadNanos returns the calling thread's CPU time in nanoseconds.
func threadNanos(b *testing.B) float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Skip("CLOCK_THREAD_CPUTIME_ID:", err)
	}
	return float64(ts.Nano())
}

// BenchmarkSkinDQSOverLBS runs the SkinLBS and the SkinDQS CPU functions
// (the paths lbsFast selects) back to back in every iteration on the
// crowd's shape (benchSkinData, 1M vertices, mixed 1-4 weights), on one
// locked thread timed by its CPU time, and reports the median over
// iterations of DQS's time over LBS's ("dqs/lbs") with the median CPU ns
// per vertex of each: on a machine shared with other work, runs this close
// together see much the same disturbance.
func BenchmarkSkinDQSOverLBS(b *testing.B) {
	kl, err := Definition(SkinLBS)
	if err != nil {
		b.Fatal(err)
	}
	kd, err := Definition(SkinDQS)
	if err != nil {
		b.Fatal(err)
	}
	dl, dd := benchSkinData(b, false), benchSkinData(b, true)
	n := float64(dd.End - dd.Begin)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ratios, tl, td []float64
	for b.Loop() {
		t0 := threadNanos(b)
		if err := kl.CPU(nil, &dl); err != nil {
			b.Fatal(err)
		}
		t1 := threadNanos(b)
		if err := kd.CPU(nil, &dd); err != nil {
			b.Fatal(err)
		}
		t2 := threadNanos(b)
		l, d := t1-t0, t2-t1
		ratios, tl, td = append(ratios, d/l), append(tl, l/n), append(td, d/n)
	}
	med := func(x []float64) float64 { slices.Sort(x); return x[len(x)/2] }
	b.ReportMetric(med(ratios), "dqs/lbs")
	b.ReportMetric(med(tl), "lbs-ns/vert")
	b.ReportMetric(med(td), "dqs-ns/vert")
}
