package trace_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/trace"
)

// Record a scheduler's tasks and write a Chrome trace (open it in
// ui.perfetto.dev) and an SVG timeline of one frame.
func Example() {
	reg := sched.NewRegistry()
	reg.Register(1, sched.Kernel{Name: "work", CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }})
	s, _ := sched.New(sched.Config{Kernels: reg})
	rec := trace.New(s.Threads(), 1<<12)
	rec.SetKernelNames(trace.NamesFromRegistry(reg))
	s.Close()

	// The recorder is the scheduler's Observer.
	s, _ = sched.New(sched.Config{Kernels: reg, Observer: rec})
	main, _ := s.RegisterThread("main")
	rec.Frame(0)
	root, _ := main.Create(&sched.Task{})
	for i := 0; i < 8; i++ {
		main.Add(&sched.Task{Kernel: 1, Parent: root})
	}
	main.Run(root)
	main.Wait(root)
	s.Close()

	dir, _ := os.MkdirTemp("", "trace")
	defer os.RemoveAll(dir)
	f, _ := os.Create(filepath.Join(dir, "frame.json"))
	fmt.Println(rec.WriteChrome(f), f.Close())
	g, _ := os.Create(filepath.Join(dir, "frame.svg"))
	fmt.Println(rec.WriteTimelineSVG(g, 0), g.Close())
	fmt.Println(len(rec.Events()), "events,", rec.Dropped(), "dropped")
	// Output:
	// <nil> <nil>
	// <nil> <nil>
	// 9 events, 0 dropped
}
