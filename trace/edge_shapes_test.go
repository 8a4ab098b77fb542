package trace

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/sched"
)

// A bare-array trace is JSON: whitespace (a newline, a pretty printer's
// indent) may come before the '['.
func TestCheckChromeBareArrayAfterWhitespace(t *testing.T) {
	const ok = `[{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1}]`
	const bad = `[{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"b","ph":"X","ts":5,"dur":10,"pid":1,"tid":1}]`
	for _, pre := range []string{"", " ", "\n", "\t\r\n  "} {
		if err := CheckChrome(strings.NewReader(pre + ok)); err != nil {
			t.Errorf("%q + valid array: %v", pre, err)
		}
		if err := CheckChrome(strings.NewReader(pre + bad)); err == nil || !strings.Contains(err.Error(), "partly overlap") {
			t.Errorf("%q + overlapping array: %v, want the overlap", pre, err)
		}
	}
	// Not a trace at all: named as such.
	for _, in := range []string{"", "  ", "42", `"x"`, "null", " null", "{}", `{"traceEvents":null}`, `{"events":[]}`,
		`[1,2]`, `{"traceEvents":{}}`, `[{"ph":"X","ts":"0","dur":1}]`, `[{"ph":"X","ts":0,"dur":1}`} {
		if err := CheckChrome(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "not a Chrome trace") {
			t.Errorf("%q: %v, want \"not a Chrome trace\"", in, err)
		}
	}
}

// Frame numbers that come back (a second run recorded without Reset, or a
// counter that wraps): the frame is the latest marker with that number,
// up to the next marker after it.
func TestFrameSpanRepeatedNumber(t *testing.T) {
	rec := New(1, 64)
	task := func(id uint32, start, stop int64) {
		rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: sched.TaskID(id), Kernel: 1, Start: start, Stop: stop})
	}
	rec.Frame(0)
	f0 := rec.Events()[0].Start
	task(1, f0+1, f0+10)
	time.Sleep(time.Millisecond)
	rec.Frame(1)
	time.Sleep(time.Millisecond)
	rec.Frame(0)
	evs := rec.Events()
	f1, f0b := evs[len(evs)-2].Start, evs[len(evs)-1].Start
	task(2, f0b+1, f0b+1000)
	start, end, ok := rec.FrameSpan(0)
	if !ok || start != f0b || end != f0b+1000 {
		t.Fatalf("FrameSpan(0) = %d, %d, %v; want the second frame 0: %d, %d, true (frame 1 at %d)", start, end, ok, f0b, f0b+1000, f1)
	}
	if err := rec.WriteTimelineSVG(io.Discard, 0); err != nil {
		t.Fatalf("timeline of a frame recorded twice: %v", err)
	}
}

// A frame whose marker was recorded but nothing after it: the error says
// so rather than that the frame was never recorded.
func TestTimelineEmptyFrameError(t *testing.T) {
	rec := New(1, 64)
	rec.Frame(7)
	err := rec.WriteTimelineSVG(io.Discard, 7)
	if err == nil || strings.Contains(err.Error(), "no frame 7 recorded") || !strings.Contains(err.Error(), "7") {
		t.Fatalf("empty frame 7: %v, want an error saying it is empty", err)
	}
	if err := rec.WriteTimelineSVG(io.Discard, 8); err == nil || !strings.Contains(err.Error(), "no frame 8") {
		t.Fatalf("missing frame 8: %v", err)
	}
}

// Random slices on every kind of track (scheduler threads, out-of-range
// threads, GPU, SPU, foreign goroutines), overlapping, nested, zero
// length, identical, touching: WriteChrome must write every one as a
// complete event whose ts and dur read back to the exact nanoseconds, the
// result must pass CheckChrome, and only frames must be instants.
func TestChromeRandomSlicesRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		rec := New(3, 4096)
		type key struct {
			task          string
			start, length int64
		}
		want := map[key]int{}
		var starts []int64
		for i := 0; i < 300; i++ {
			var start int64
			if len(starts) > 0 && rng.IntN(3) == 0 {
				start = starts[rng.IntN(len(starts))] // touching or same start
			} else {
				start = 1_000_000_000 + rng.Int64N(2_000_000)
			}
			length := rng.Int64N(50_000)
			if rng.IntN(10) == 0 {
				length = 0
			}
			starts = append(starts, start+length)
			where := []sched.Affinity{sched.AnyWorker, sched.GPU, sched.SPU}[rng.IntN(3)]
			thread := rng.IntN(5) - 1 // -1 .. 3 (3 is out of range)
			id := sched.TaskID(i + 1)
			rec.TaskRan(&sched.RunEvent{Thread: thread, Where: where, Task: id, Kernel: sched.KernelID(rng.IntN(4) + 1),
				Dependency: sched.TaskID(rng.IntN(i + 1)), Start: start, Stop: start + length})
			want[key{id.String(), start, length}]++
		}
		rec.Frame(1)
		var buf bytes.Buffer
		if err := rec.WriteChrome(&buf); err != nil {
			t.Fatal(err)
		}
		if err := CheckChrome(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var doc struct {
			TraceEvents []struct {
				Ph   string         `json:"ph"`
				Ts   float64        `json:"ts"`
				Dur  *float64       `json:"dur"`
				Args map[string]any `json:"args"`
			} `json:"traceEvents"`
			OtherData map[string]any `json:"otherData"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		instants := 0
		for _, e := range doc.TraceEvents {
			switch e.Ph {
			case "X":
				start := int64(math.Round(e.Ts * 1000))
				k := key{e.Args["task"].(string), start, int64(math.Round(*e.Dur * 1000))}
				if want[k] == 0 {
					t.Fatalf("seed %d: slice %+v was not recorded", seed, k)
				}
				want[k]--
			case "i":
				instants++
			}
		}
		for k, n := range want {
			if n != 0 {
				t.Fatalf("seed %d: slice %+v missing from the trace", seed, k)
			}
		}
		if instants != 1 || doc.OtherData["dropped"] != float64(0) {
			t.Fatalf("seed %d: %d instants, dropped %v", seed, instants, doc.OtherData["dropped"])
		}
	}
}

// The timeline is well-formed XML whatever the names hold.
func TestTimelineSVGWellFormed(t *testing.T) {
	rec := New(2, 64)
	rec.SetThreadName(0, `main <&> "quoted"`)
	rec.SetThreadName(5, "ignored") // out of range: no effect, no panic
	rec.SetKernelNames(func(id sched.KernelID) string { return fmt.Sprintf(`k<%d>&"x"`, id) })
	rec.Frame(0)
	t0 := rec.Events()[0].Start
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 1, Kernel: 1, Start: t0, Stop: t0 + 1_000_000})
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 2, Kernel: 2, Start: t0 + 100_000, Stop: t0 + 200_000})
	rec.TaskRan(&sched.RunEvent{Thread: -1, Where: sched.GPU, Task: 3, Kernel: 3, Start: t0 + 100_000, Stop: t0 + 900_000, Err: errors.New("x")})
	rec.AddDecision(Decision{Kernel: 3, Begin: 0, End: 0, Placed: t0, Device: `gpu<&>`, Reason: "model",
		Predicted: map[string]time.Duration{"cpu": -1, "gpu": time.Microsecond}, Measured: time.Millisecond})
	var buf bytes.Buffer
	if err := rec.WriteTimelineSVG(&buf, 0); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, buf.String())
		}
		_ = tok
	}
	if !strings.Contains(buf.String(), "main &lt;&amp;&gt;") {
		t.Fatal("thread name not escaped")
	}
}

// The recorder is an Observer: "safe for concurrent use". Several
// goroutines record on the shared tracks (executors, foreign goroutines)
// and scheduler threads while another reads Events, Dropped and writes
// the Chrome trace; nothing is lost that fit, and what did not fit is
// counted.
func TestRecorderConcurrentUse(t *testing.T) {
	const perG, gs = 500, 6
	rec := New(2, 1000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			_ = rec.Events()
			_ = rec.Dropped()
			if err := rec.WriteChrome(io.Discard); err != nil {
				readerDone <- err
				return
			}
		}
	}()
	for g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				ev := sched.RunEvent{Thread: -1, Where: []sched.Affinity{sched.GPU, sched.SPU, sched.AnyWorker}[g%3], Task: sched.TaskID(i + 1),
					Start: int64(i * 10), Stop: int64(i*10 + 5)}
				if g < 2 {
					ev.Thread = g // one goroutine per scheduler thread
				}
				rec.TaskRan(&ev)
				if g == 5 {
					rec.Scope(-1, "user", sched.Nanotime())
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	select {
	case err := <-readerDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader hung")
	}
	// Threads 0 and 1 get goroutines 0 and 1 (500 each), GPU 3, SPU 4:
	// all fit. The other track gets goroutine 2's 500 and goroutine 5's
	// 500 tasks and 500 scopes: 500 of those do not fit.
	got := int64(len(rec.Events()))
	if got+rec.Dropped() != perG*gs+perG {
		t.Fatalf("%d recorded + %d dropped, want %d", got, rec.Dropped(), perG*gs+perG)
	}
	if rec.Dropped() != 500 {
		t.Fatalf("dropped %d, want 500", rec.Dropped())
	}
	rec.Reset()
	if len(rec.Events()) != 0 || rec.Dropped() != 0 || len(rec.Decisions()) != 0 {
		t.Fatal("Reset kept something")
	}
}

// Zero threads and zero capacity are valid shapes: everything is dropped
// and counted, and the writers still write valid output.
func TestRecorderZeroShapes(t *testing.T) {
	rec := New(0, 0)
	rec.TaskRan(&sched.RunEvent{Thread: 0, Where: sched.AnyWorker, Task: 1, Start: 1, Stop: 2})
	rec.Scope(3, "s", 0)
	rec.Frame(0)
	if rec.Dropped() != 3 || len(rec.Events()) != 0 {
		t.Fatalf("dropped %d, events %d", rec.Dropped(), len(rec.Events()))
	}
	var buf bytes.Buffer
	if err := rec.WriteChrome(&buf); err != nil {
		t.Fatal(err)
	}
	if err := CheckChrome(&buf); err != nil {
		t.Fatal(err)
	}
	if err := rec.WriteTimelineSVG(io.Discard, 0); err == nil {
		t.Fatal("timeline of a frame that was dropped")
	}
}

// A write error reaches the caller.
func TestWriteChromeReportsWriteError(t *testing.T) {
	rec := New(1, 4096)
	for i := range 2000 {
		rec.TaskRan(&sched.RunEvent{Thread: 0, Task: sched.TaskID(i + 1), Start: int64(i), Stop: int64(i)})
	}
	if err := rec.WriteChrome(failWriter{}); err == nil {
		t.Fatal("write error lost")
	}
	if err := rec.WriteTimelineSVG(failWriter{}, 0); err == nil {
		t.Fatal("timeline: no error (no frame, or write error lost)")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A program that traces only on request may hold a nil *Recorder; in a
// Tee it is not a nil Observer, and the scheduler calls it.
func TestNilRecorderRecordsNothing(t *testing.T) {
	var rec *Recorder
	obs := Tee{rec, nil}
	obs.TaskRan(&sched.RunEvent{Thread: 0, Task: 1, Start: 1, Stop: 2})
	rec.Scope(0, "s", 0)
	rec.Frame(0)
}

// TestNewNegativeCounts: negative counts are taken as 0, not a panic: no
// thread tracks, and no room (every event dropped and counted).
func TestNewNegativeCounts(t *testing.T) {
	r := New(-1, -5)
	r.Scope(0, "s", sched.Nanotime())
	r.Frame(1)
	if len(r.Events()) != 0 || r.Dropped() != 2 {
		t.Fatalf("events %d, dropped %d; want 0 and 2", len(r.Events()), r.Dropped())
	}
}

// TestScopeStartInFuture: a scope whose start is later than now is
// recorded empty at now, so the trace stays valid for CheckChrome.
func TestScopeStartInFuture(t *testing.T) {
	r := New(1, 8)
	r.Scope(0, "ahead", sched.Nanotime()+int64(time.Hour))
	ev := r.Events()
	if len(ev) != 1 || ev[0].Start != ev[0].Stop {
		t.Fatalf("events %+v, want one empty scope", ev)
	}
	var b bytes.Buffer
	if err := r.WriteChrome(&b); err != nil {
		t.Fatal(err)
	}
	if err := CheckChrome(&b); err != nil {
		t.Fatal(err)
	}
}
