package gfx

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/render"
)

// BenchmarkRecord: display-list building of a frame of 10,000 draws (8
// gather contexts, already merged and sorted) through render.Renderer.Record
// into Vulkan secondary command buffers, on a device without validation:
//
//   - serial: one range, recorded by the calling thread;
//   - parallel: the Renderer's default ranges (4 per scheduler thread),
//     recorded by the scheduler's threads (main + 1 worker on 2 CPUs);
//
// each "record" (BeginFrame, ranges, the primary command buffer; nothing
// submitted, so lavapipe's rasteriser does not compete for the CPUs) and
// "frame" (also submitted and executed by lavapipe on a 64×64 target; the
// fence wait of the frame two frames back is in the loop). Reports ns/draw
// and allocations.
func BenchmarkRecord(b *testing.B) {
	benchOnce.Do(func() { benchDev, benchErr = gpu.Open(gpu.Options{}) })
	if errors.Is(benchErr, gpu.ErrNoDevice) && os.Getenv("CI") != "true" {
		b.Skipf("skipping: no Vulkan device (with CI=true this fails): %v", benchErr)
	}
	must(b, benchErr)
	d := benchDev
	const nctx, per = 8, 10000 / 8
	for _, mode := range []struct {
		name   string
		ranges int  // render.Config.Ranges; 0: default
		direct int  // > 0: hand-split into this many goroutines, no scheduler
		submit bool // submit and execute every frame
	}{
		{"record/serial", 1, 0, false},
		{"record/parallel", 0, 0, false},
		{"record/direct-1", 0, 1, false},
		{"record/direct-2", 0, 2, false},
		{"frame/serial", 1, 0, true},
		{"frame/parallel", 0, 0, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			e := newGfxEnv(b, d, 0, render.Config{Ranges: mode.ranges})
			g, err := NewGraphics(d, GraphicsOptions{Width: 64, Height: 64})
			must(b, err)
			defer g.Close()
			g.noSubmit = !mode.submit
			m := newMiniScene(b, g)
			sorted, err := e.rr.MergeSort(e.main, randomDraws(b, m, nctx, per), m.reg)
			must(b, err)
			errs := make([]error, max(mode.direct, 1))
			frame := func() (int, error) {
				if mode.direct > 0 {
					return mode.direct, handSplit(g, sorted, errs)
				}
				st, err := e.rr.Record(e.main, sorted, g)
				return st.Ranges, err
			}
			ranges := 0
			for range 3 { // grow the secondaries; compile on first use
				ranges, err = frame()
				must(b, err)
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := frame(); err != nil {
					b.Fatal(err)
				}
			}
			must(b, g.Wait())
			draws := float64(b.N * sorted.Len())
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/draws, "ns/draw")
			// CPU time of the whole process (all threads, lavapipe's
			// included) per draw: the work, whatever the machine's load;
			// ns/draw is the wall-clock rate, which shows a parallel
			// speed-up only when the CPUs are free.
			b.ReportMetric(float64(cpuTime()-cpu0)/draws, "cpu-ns/draw")
			b.ReportMetric(float64(ranges), "ranges")
		})
	}
}

// handSplit records s in len(errs) equal ranges on as many goroutines,
// calling the Recorder directly (no scheduler, no render.Renderer): the
// reference that parallel recording through the scheduler is compared
// with, measured in the same run on the same machine.
func handSplit(g *Graphics, s *render.Sorted, errs []error) error {
	parts, n := len(errs), s.Len()
	if err := g.BeginFrame(render.FrameInfo{Ranges: parts, Threads: parts, Packets: n}); err != nil {
		return err
	}
	rec := func(w int) {
		rg := render.Range{Index: w, First: w * n / parts, Count: (w+1)*n/parts - w*n/parts}
		if errs[w] = g.Begin(w, rg); errs[w] != nil {
			return
		}
		var pipe render.PipelineID
		var mesh render.MeshID
		for i := rg.First; i < rg.First+rg.Count; i++ {
			d := s.Draw(i)
			if d.Pipeline != pipe {
				pipe = d.Pipeline
				g.BindPipeline(w, pipe)
			}
			if d.Mesh != mesh {
				mesh = d.Mesh
				g.BindMesh(w, mesh)
			}
			g.Draw(w, d)
		}
		errs[w] = g.End(w, rg)
	}
	var wg sync.WaitGroup
	for w := 1; w < parts; w++ {
		wg.Go(func() { rec(w) })
	}
	rec(0)
	wg.Wait()
	return g.EndFrame(errors.Join(errs...))
}

// cpuTime returns the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
