// Package trace is a thread profiler for the scheduler: it records one scope
// per kernel invocation per thread (and per GPU or SPU dispatch), frame
// markers and user scopes, and writes them in the Chrome trace event format
// (open the file in https://ui.perfetto.dev or chrome://tracing) or as an SVG
// timeline of one frame.
//
// A Recorder is a sched.Observer: pass it as sched.Config.Observer (or in a
// Tee with other observers). Recording appends a fixed-size event to a
// preallocated per-thread buffer: no lock, no allocation (the shared tracks,
// GPU, SPU and other, where several goroutines record, take a mutex). When a buffer is
// full, further events on that thread are dropped and counted (Dropped), never
// grown. A disabled Recorder (SetEnabled(false)) costs one atomic load per
// event; no Recorder at all costs the scheduler one nil check.
//
// Each task scope carries the kernel name, the task ID, its parent and its
// dependency in its arguments; dependencies are also drawn as flow arrows
// from the end of the dependency's last scope to the start of the dependent.
// A task placed by a Placer (sched.Auto) carries its Decision too, once
// recorded with AddDecision: the device chosen, the reason, each device's
// predicted time and the measured one.
//
// Slices on one track of a Chrome trace must nest: two complete ("X")
// events on the same (pid, tid) are either disjoint or one contains the
// other (Perfetto drops the others). Few tracks nest by construction: a
// worker's kernel that waits hands the worker to another goroutine, so a
// suspended kernel's scope overlaps, without containing, kernels that ran
// on the same worker after it; the GPU executor has several command buffers
// in flight, so one batch's tasks overlap the next batch's, and a foreign
// goroutine's scopes may overlap another's. WriteChrome therefore spreads
// every track over as many lanes as it needs, each lane a thread of the
// trace named after the track ("GPU", "GPU #2", ...): a slice goes to the
// first lane where it nests (starts after the lane's open slices end, or
// inside the innermost one), so a track whose slices nest stays one lane.
// With the GPU's two command buffers in flight that is, in practice, a
// lane per submission slot. Rejected: async ("b"/"e") events, which may
// overlap freely but lose the thread grouping and the flow arrows' binding
// points in Perfetto; and clipping slices, which would misstate durations.
// CheckChrome verifies the result (and any Chrome trace).
package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/vkjobs/vkjobs/sched"
)

// Kind of a recorded event.
type Kind uint8

const (
	KindTask  Kind = iota // a kernel invocation (sched.RunEvent)
	KindScope             // a user scope (Begin/End)
	KindFrame             // a frame marker (instant)
)

// Event is one recorded scope or marker. Times are sched.Nanotime().
type Event struct {
	Kind       Kind
	Where      sched.Affinity
	Failed     bool
	Kernel     sched.KernelID
	Thread     int
	Task       sched.TaskID
	Parent     sched.TaskID
	Dependency sched.TaskID
	Begin, End uint32 // work items
	Start      int64
	Stop       int64
	Label      string // user scopes and frame markers (static strings: no allocation)
	Frame      int
}

type track struct {
	mu     sync.Mutex // only for shared tracks (executors, foreign goroutines)
	events []Event
	n      atomic.Int64
	drop   atomic.Int64
	name   string
}

// Recorder collects events. Create with New.
type Recorder struct {
	enabled atomic.Bool
	threads []track // scheduler threads by index
	gpu     track   // Thread -1, Where GPU
	spu     track   // Thread -1, Where SPU
	other   track   // anything else (foreign goroutines, frame markers)
	names   func(sched.KernelID) string

	decMu     sync.Mutex
	decisions []Decision // Auto placements (AddDecision)
}

// New returns an enabled recorder for a scheduler with the given number of
// threads (sched.Scheduler.Threads()), keeping up to perThread events per
// thread and per device track. A negative count is taken as 0: no thread
// tracks (their events go to the "other" track), or no room (every event
// is dropped and counted, see Dropped).
func New(threads, perThread int) *Recorder {
	threads, perThread = max(threads, 0), max(perThread, 0)
	r := &Recorder{threads: make([]track, threads)}
	for i := range r.threads {
		r.threads[i].events = make([]Event, perThread)
		r.threads[i].name = fmt.Sprintf("thread %d", i)
	}
	r.gpu = track{events: make([]Event, perThread), name: "GPU"}
	r.spu = track{events: make([]Event, perThread), name: "SPU"}
	r.other = track{events: make([]Event, perThread), name: "other"}
	r.enabled.Store(true)
	return r
}

// The recording methods (TaskRan, Scope, Frame) of a nil *Recorder do
// nothing: a program that traces only on request can pass its possibly nil
// recorder in a Tee, where a nil *Recorder is not a nil Observer.

// SetEnabled turns recording on or off.
func (r *Recorder) SetEnabled(on bool) { r.enabled.Store(on) }

// SetThreadName names thread i's track (e.g. "worker 0", "main").
func (r *Recorder) SetThreadName(i int, name string) {
	if i >= 0 && i < len(r.threads) {
		r.threads[i].name = name
	}
}

// SetKernelNames sets how kernel IDs are named in the output (e.g. from the
// scheduler's registry). Call before writing.
func (r *Recorder) SetKernelNames(f func(sched.KernelID) string) { r.names = f }

// NamesFromRegistry names kernels by their registration.
func NamesFromRegistry(reg *sched.Registry) func(sched.KernelID) string {
	return func(id sched.KernelID) string {
		if k := reg.Lookup(id); k != nil {
			return k.Name
		}
		return fmt.Sprintf("kernel %d", id)
	}
}

// Reset forgets every event and decision (between runs; not concurrently
// with recording).
func (r *Recorder) Reset() {
	r.decMu.Lock()
	r.decisions = nil
	r.decMu.Unlock()
	for _, t := range r.allTracks() {
		t.n.Store(0)
		t.drop.Store(0)
	}
}

func (r *Recorder) allTracks() []*track {
	ts := make([]*track, 0, len(r.threads)+3)
	for i := range r.threads {
		ts = append(ts, &r.threads[i])
	}
	return append(ts, &r.gpu, &r.spu, &r.other)
}

// TaskRan implements sched.Observer.
func (r *Recorder) TaskRan(ev *sched.RunEvent) {
	if r == nil || !r.enabled.Load() {
		return
	}
	e := Event{Kind: KindTask, Where: ev.Where, Failed: ev.Err != nil, Kernel: ev.Kernel, Thread: ev.Thread,
		Task: ev.Task, Parent: ev.Parent, Dependency: ev.Dependency, Begin: ev.Begin, End: ev.End,
		Start: ev.Start, Stop: ev.Stop}
	r.put(ev.Thread, ev.Where, &e)
}

// Scope records a user scope on thread (a scheduler thread index, or -1 for
// a shared track) that started at start (sched.Nanotime(); a start later
// than now is taken as now) and ends now. label should be a constant string. A thread's track
// takes no lock: pass a thread index only from the goroutine that runs as
// that thread (a kernel's Ctx.Index(), a registered thread's own
// goroutine); any other goroutine passes -1.
func (r *Recorder) Scope(thread int, label string, start int64) {
	if r == nil || !r.enabled.Load() {
		return
	}
	stop := sched.Nanotime()
	// A start later than now (a clock other than sched.Nanotime, or a
	// time computed ahead) would make a negative duration, which no trace
	// viewer takes: the scope is recorded empty, at now.
	e := Event{Kind: KindScope, Thread: thread, Label: label, Start: min(start, stop), Stop: stop}
	r.put(thread, sched.AnyWorker, &e)
}

// Frame records a frame marker (frame number n begins now).
func (r *Recorder) Frame(n int) {
	if r == nil || !r.enabled.Load() {
		return
	}
	now := sched.Nanotime()
	e := Event{Kind: KindFrame, Thread: -1, Label: "frame", Frame: n, Start: now, Stop: now}
	r.put(-1, sched.AnyWorker, &e)
}

func (r *Recorder) put(thread int, where sched.Affinity, e *Event) {
	var t *track
	shared := true
	switch {
	case thread >= 0 && thread < len(r.threads):
		t, shared = &r.threads[thread], false
	case where == sched.GPU:
		t = &r.gpu
	case where == sched.SPU:
		t = &r.spu
	default:
		t = &r.other
	}
	if shared {
		t.mu.Lock()
		defer t.mu.Unlock()
	}
	i := t.n.Load()
	if int(i) >= len(t.events) {
		t.drop.Add(1)
		return
	}
	t.events[i] = *e
	t.n.Store(i + 1)
}

// Dropped returns how many events did not fit their track's buffer.
func (r *Recorder) Dropped() int64 {
	var d int64
	for _, t := range r.allTracks() {
		d += t.drop.Load()
	}
	return d
}

// Events returns a copy of every recorded event, ordered by start time.
func (r *Recorder) Events() []Event {
	var out []Event
	for _, t := range r.allTracks() {
		t.mu.Lock()
		out = append(out, t.events[:t.n.Load()]...)
		t.mu.Unlock()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

func (r *Recorder) kernelName(id sched.KernelID) string {
	if r.names != nil {
		return r.names(id)
	}
	return fmt.Sprintf("kernel %d", id)
}

// tid maps an event to its Chrome trace thread ID.
func (r *Recorder) tid(e *Event) int {
	switch {
	case e.Thread >= 0 && e.Thread < len(r.threads):
		return e.Thread
	case e.Where == sched.GPU:
		return len(r.threads)
	case e.Where == sched.SPU:
		return len(r.threads) + 1
	}
	return len(r.threads) + 2
}

// lanes returns the trace thread ID of each event of evs (which are sorted
// by start): its track's tid, or the tid of an extra lane of the track
// where its slice nests (see the package documentation). newLane is
// called for each extra lane with the track's tid, the lane's tid and the
// lane's number on its track (1 for the second lane).
//
// Nesting is decided on the values a reader computes from the JSON: the
// start ts and the end ts + dur, in float64 microseconds (chromeUs and
// chromeEnd). Decided on the nanoseconds, a slice that begins where the
// previous one ends stayed on its lane although, read back, the previous
// one's ts + dur can come out one float step after that begin (1118504.866
// + ... = 1118504.8660000002): a partial overlap to a reader that adds in
// floats, as the trace viewers' importers do.
func (r *Recorder) lanes(evs []Event, newLane func(track, tid, n int)) []int {
	type lane struct {
		tid  int
		open []float64 // end times (chromeEnd) of the open slices, innermost last
	}
	byTrack := map[int][]*lane{}
	next := len(r.threads) + 3
	order := make([]int, len(evs))
	for i := range order {
		order[i] = i
	}
	// Outer slices first among equal starts, so that inner ones nest.
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := &evs[order[a]], &evs[order[b]]
		if ea.Start != eb.Start {
			return ea.Start < eb.Start
		}
		return ea.Stop > eb.Stop
	})
	tids := make([]int, len(evs))
	for _, i := range order {
		e := &evs[i]
		base := r.tid(e)
		if e.Kind == KindFrame {
			tids[i] = base // an instant: no slice
			continue
		}
		ls := byTrack[base]
		start, end := chromeUs(e.Start), chromeEnd(e)
		var l *lane
		for _, c := range ls {
			for len(c.open) > 0 && c.open[len(c.open)-1] <= start {
				c.open = c.open[:len(c.open)-1]
			}
			if len(c.open) == 0 || end <= c.open[len(c.open)-1] {
				l = c
				break
			}
		}
		if l == nil {
			l = &lane{tid: base}
			if len(ls) > 0 {
				l.tid = next
				next++
				newLane(base, l.tid, len(ls))
			}
			byTrack[base] = append(ls, l)
		}
		l.open = append(l.open, end)
		tids[i] = l.tid
	}
	return tids
}

// chromeUs is a time as WriteChrome writes it: microseconds.
func chromeUs(ns int64) float64 { return float64(ns) / 1000 }

// chromeEnd is where a reader of the JSON puts an event's end: ts + dur,
// added in float64.
func chromeEnd(e *Event) float64 { return chromeUs(e.Start) + chromeUs(e.Stop-e.Start) }

type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	Bp   string         `json:"bp,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChrome writes every event in the Chrome trace event format (JSON
// object form, timestamps in microseconds).
func (r *Recorder) WriteChrome(w io.Writer) error {
	evs := r.Events()
	var out []chromeEvent
	meta := func(tid int, name string) {
		out = append(out, chromeEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: tid, Args: map[string]any{"name": name}})
		out = append(out, chromeEvent{Name: "thread_sort_index", Ph: "M", Pid: 1, Tid: tid, Args: map[string]any{"sort_index": tid}})
	}
	out = append(out, chromeEvent{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": "vkjobs"}})
	for i := range r.threads {
		meta(i, r.threads[i].name)
	}
	meta(len(r.threads), "GPU")
	meta(len(r.threads)+1, "SPU")
	meta(len(r.threads)+2, "other")
	tids := r.lanes(evs, func(tid, lane, sortIndex int) {
		name := "other"
		switch {
		case tid < len(r.threads):
			name = r.threads[tid].name
		case tid == len(r.threads):
			name = "GPU"
		case tid == len(r.threads)+1:
			name = "SPU"
		}
		out = append(out, chromeEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: lane, Args: map[string]any{"name": fmt.Sprintf("%s #%d", name, sortIndex+1)}})
		out = append(out, chromeEvent{Name: "thread_sort_index", Ph: "M", Pid: 1, Tid: lane, Args: map[string]any{"sort_index": tid}})
	})
	// The last scope of each task, for dependency arrows.
	last := map[sched.TaskID]int{}
	for i := range evs {
		e := &evs[i]
		if e.Kind == KindTask {
			if p, ok := last[e.Task]; !ok || evs[p].Stop < e.Stop {
				last[e.Task] = i
			}
		}
	}
	us := chromeUs
	decs := r.Decisions()
	dix := newDecisionIndex(decs)
	for i := range decs {
		d := &decs[i]
		out = append(out, chromeEvent{Name: "auto → " + d.Device, Cat: "auto", Ph: "i", S: "t", Ts: us(d.Placed),
			Pid: 1, Tid: len(r.threads) + 2, Args: map[string]any{"kernel": r.kernelName(d.Kernel), "auto": d.args()}})
	}
	flow := 0
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case KindFrame:
			out = append(out, chromeEvent{Name: fmt.Sprintf("frame %d", e.Frame), Cat: "frame", Ph: "i", S: "g",
				Ts: us(e.Start), Pid: 1, Tid: r.tid(e)})
		case KindScope:
			d := us(e.Stop - e.Start)
			out = append(out, chromeEvent{Name: e.Label, Cat: "scope", Ph: "X", Ts: us(e.Start), Dur: &d, Pid: 1, Tid: tids[i]})
		case KindTask:
			d := us(e.Stop - e.Start)
			args := map[string]any{
				"task": e.Task.String(), "kernel": int(e.Kernel), "where": e.Where.String(),
				"items": fmt.Sprintf("[%d,%d)", e.Begin, e.End),
			}
			if e.Parent != sched.NoTask {
				args["parent"] = e.Parent.String()
			}
			if e.Dependency != sched.NoTask {
				args["dependency"] = e.Dependency.String()
			}
			if e.Failed {
				args["failed"] = true
			}
			if d := dix.of(e); d != nil {
				args["auto"] = d.args()
			}
			out = append(out, chromeEvent{Name: r.kernelName(e.Kernel), Cat: "task", Ph: "X", Ts: us(e.Start), Dur: &d,
				Pid: 1, Tid: tids[i], Args: args})
			if di, ok := last[e.Dependency]; ok && e.Dependency != sched.NoTask && evs[di].Stop <= e.Start {
				flow++
				id := fmt.Sprint(flow)
				out = append(out,
					chromeEvent{Name: "dependency", Cat: "dep", Ph: "s", ID: id, Ts: us(evs[di].Stop), Pid: 1, Tid: tids[di]},
					chromeEvent{Name: "dependency", Cat: "dep", Ph: "f", Bp: "e", ID: id, Ts: us(e.Start), Pid: 1, Tid: tids[i]})
			}
		}
	}
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString(`{"displayTimeUnit":"ms","traceEvents":[`); err != nil {
		return err
	}
	enc := json.NewEncoder(bw)
	for i := range out {
		if i > 0 {
			bw.WriteByte(',')
		}
		if err := enc.Encode(&out[i]); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(bw, `],"otherData":{"dropped":%d}}`+"\n", r.Dropped()); err != nil {
		return err
	}
	return bw.Flush()
}

// Tee forwards every RunEvent to several observers (nil entries skipped).
type Tee []sched.Observer

// TaskRan implements sched.Observer.
func (t Tee) TaskRan(ev *sched.RunEvent) {
	for _, o := range t {
		if o != nil {
			o.TaskRan(ev)
		}
	}
}
