package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// autoTrace records two Auto tasks of kernel 3, one placed on the GPU and
// one on CPU workers (two pieces), with their decisions, and a CPU task
// of the same kernel placed by hand (no decision), inside frame 0.
func autoTrace(t *testing.T) *Recorder {
	t.Helper()
	rec := New(2, 64)
	rec.SetKernelNames(func(sched.KernelID) string { return "saxpy" })
	rec.Frame(0)
	t0 := sched.Nanotime()
	us := int64(time.Microsecond)
	rec.TaskRan(&sched.RunEvent{Thread: -1, Where: sched.GPU, Task: 1, Kernel: 3, Begin: 0, End: 1000, Start: t0 + 10*us, Stop: t0 + 90*us})
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 3, Parent: 2, Kernel: 3, Begin: 0, End: 500, Start: t0 + 110*us, Stop: t0 + 150*us})
	rec.TaskRan(&sched.RunEvent{Thread: 1, Where: sched.AnyWorker, Task: 4, Parent: 2, Kernel: 3, Begin: 500, End: 1000, Start: t0 + 110*us, Stop: t0 + 155*us})
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 5, Kernel: 3, Begin: 0, End: 2000, Start: t0 + 160*us, Stop: t0 + 190*us})
	for sched.Nanotime() < t0+200*us {
		time.Sleep(50 * time.Microsecond)
	}
	rec.Frame(1)
	rec.AddDecision(Decision{Kernel: 3, Begin: 0, End: 1000, Placed: t0 + 5*us, Device: "gpu", Reason: "explore",
		Predicted: map[string]time.Duration{"cpu": 50 * time.Microsecond, "gpu": -1}, Measured: 80 * time.Microsecond})
	rec.AddDecision(Decision{Kernel: 3, Begin: 0, End: 1000, Placed: t0 + 100*us, Device: "cpu", Reason: "model",
		Predicted: map[string]time.Duration{"cpu": 50 * time.Microsecond, "gpu": 80 * time.Microsecond}, Measured: 45 * time.Microsecond})
	return rec
}

// TestChromeTraceShowsAutoDecisions: each Auto task's slices carry its
// decision (device, reason, predicted time per device, measured time) in
// their args; a task without a decision carries none; each decision is
// also an instant event.
func TestChromeTraceShowsAutoDecisions(t *testing.T) {
	rec := autoTrace(t)
	var buf bytes.Buffer
	if err := rec.WriteChrome(&buf); err != nil {
		t.Fatal(err)
	}
	if err := CheckChrome(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	var f struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			Args          map[string]any
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	byTask := map[string]map[string]any{}
	instants := 0
	for _, e := range f.TraceEvents {
		switch {
		case e.Cat == "task":
			a, _ := e.Args["auto"].(map[string]any)
			byTask[e.Args["task"].(string)] = a
		case e.Cat == "auto" && e.Ph == "i":
			instants++
		}
	}
	if instants != 2 {
		t.Errorf("%d instant decision events, want 2", instants)
	}
	gpu := byTask[sched.TaskID(1).String()]
	if gpu == nil || gpu["device"] != "gpu" || gpu["reason"] != "explore" {
		t.Fatalf("GPU task's auto args %v", gpu)
	}
	pred := gpu["predicted_us"].(map[string]any)
	if pred["cpu"] != 50.0 || pred["gpu"] != nil {
		t.Errorf("GPU task's predictions %v: want cpu 50 us, gpu none", pred)
	}
	if m := gpu["measured_us"].(map[string]any); m["gpu"] != 80.0 {
		t.Errorf("GPU task's measured %v, want gpu 80 us", m)
	}
	for _, task := range []sched.TaskID{3, 4} {
		a := byTask[task.String()]
		if a == nil || a["device"] != "cpu" || a["predicted_us"].(map[string]any)["gpu"] != 80.0 {
			t.Errorf("CPU piece %v's auto args %v", task, a)
		}
	}
	if a := byTask[sched.TaskID(5).String()]; a != nil {
		t.Errorf("a task outside every decision's items got %v", a)
	}
}

// TestTimelineShowsAutoDecisions: the SVG timeline outlines Auto tasks,
// labels them with the device chosen and gives the decision in the
// tooltip.
func TestTimelineShowsAutoDecisions(t *testing.T) {
	rec := autoTrace(t)
	var buf bytes.Buffer
	if err := rec.WriteTimelineSVG(&buf, 0); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{
		"auto → gpu (explore); predicted cpu 50.0 µs, gpu ?; measured gpu 80.0 µs",
		"auto → cpu (model); predicted cpu 50.0 µs, gpu 80.0 µs; measured cpu 45.0 µs",
		`class="auto">gpu</text>`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if n := strings.Count(svg, `stroke="#000000"`); n != 3 {
		t.Errorf("%d outlined bars, want 3 (the GPU task and two CPU pieces)", n)
	}
}
