package render

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/sched"
)

// Config configures a Renderer. The zero value gives defaults.
type Config struct {
	// MergeGrain is the fewest packets per sort task (default 4096);
	// smaller frames are sorted on the calling thread.
	MergeGrain int
	// MergeTasks caps the tasks of each sort pass, at most MaxMergeTasks.
	// Default: twice the scheduler threads (at most MaxMergeTasks), so a
	// thread that helps late still finds work. A frame of n packets uses
	// fewer tasks when it is small: one per MergeGrain packets, and at most
	// sqrt(n/64), so that the digit counts (1 KiB per task and task) never
	// outweigh the packets. The memory of a frame's sort is
	// thus linear: at most 80 bytes per packet (48 for the sort items, 32
	// for the counts) plus growth slack, and about 9 KiB per context (its
	// key-byte histograms and problems), kept at the largest frame seen.
	MergeTasks int
	// Ranges is how many ranges Record splits the sorted stream into, at
	// most: one secondary command buffer each. Default: four per scheduler
	// thread, so that ranges balance across threads that are busy with
	// other work (a range already started cannot be stolen).
	Ranges int
	// MinRange is the fewest packets per range (default 64): below it, a
	// range costs more to set up than it saves.
	MinRange int
	// SplitLayers makes every range hold packets of one layer only (see
	// Range.Layer). Each non-empty layer then gets at least one range, and
	// the Ranges budget is shared among layers by size.
	SplitLayers bool
}

// MaxMergeTasks bounds Config.MergeTasks. Beyond it a pass's tasks are so
// many that the serial step between passes, which adds up their digit
// counts, costs more than the parallel scatter saves.
const MaxMergeTasks = 1024

// NumKernels is how many kernel IDs a Renderer uses: a block the
// scheduler's registry hands out (sched.Registry.RegisterBlock, owner
// "render"), shared by the Renderers of one registry.
const NumKernels = 4

// Kernel names, registered in the block in this order.
var kernelNames = [NumKernels]string{"render.parse", "render.scatter", "render.state-scan", "render.record"}

// Stats counts what MergeSort saw. Every packet of every context ends up in
// exactly one of Draws, States, Jobs (sorted), Unknown (skipped) or Invalid
// (dropped), except the tail of a corrupt context, which is unreadable.
type Stats struct {
	Contexts int // contexts merged
	Packets  int // packets in the sorted stream: Draws + States + Jobs
	Draws    int
	States   int
	Jobs     int
	Unknown  int // packets of types the renderer does not know: skipped (not an error)
	Invalid  int // packets dropped as malformed or naming unknown handles
	Overflow int // packets the contexts dropped because they were full
	Corrupt  int // contexts whose stream was truncated or corrupt (each tail dropped)
}

func (s *Stats) add(o *Stats) {
	s.Draws += o.Draws
	s.States += o.States
	s.Jobs += o.Jobs
	s.Unknown += o.Unknown
	s.Invalid += o.Invalid
	s.Overflow += o.Overflow
	s.Corrupt += o.Corrupt
}

// ctxScratch is the reusable per-context state of the parse step.
type ctxScratch struct {
	a        []item         // the context's valid packets, in order
	hist     [8][256]uint32 // byte histograms of their keys
	diff     SortKey        // bits in which their keys differ from a[0].key
	stats    Stats
	problems [MaxProblemsPerContext]Problem
	nprob    int
	_        [64]byte // keep neighbours' hot fields off this cache line
}

func (sc *ctxScratch) problem(p Problem) {
	if sc.nprob < len(sc.problems) {
		sc.problems[sc.nprob] = p
	}
	sc.nprob++
}

// Renderer runs merge-n-sort and display-list building as scheduler tasks,
// in scratch buffers it keeps and reuses: once they have grown to a frame's
// size, later frames of that size allocate nothing.
//
// A Renderer processes one frame at a time: MergeSort and Record must not
// run concurrently with each other or themselves on the same Renderer, and
// the *Sorted that MergeSort returns is valid until its next call. To
// overlap frames (a pipelined frame loop), use one Renderer per frame in
// flight; they share the scheduler and its kernels.
type Renderer struct {
	s   *sched.Scheduler
	cfg Config
	k   [NumKernels]sched.KernelID

	task sched.Task // reused by fork: Add copies it

	// merge-n-sort
	ctxs       []*RenderContext
	gens       []uint64 // the contexts' generations when merged
	reg        *Registry
	per        []ctxScratch
	rx         radixState
	bufA, bufB []item
	sorted     Sorted
	serial     bool // run every step on the caller (benchmarks)

	// display-list building
	rec      Recorder
	rsorted  *Sorted
	ranges   []Range
	rstate   []rangeState
	rangeErr []error
}

// New returns a Renderer that runs its steps on s, registering its kernels
// in s's registry unless a Renderer already did. The registry hands out
// their IDs (a block owned by "render"), so they never collide with
// another library's kernels, and Renderers created at once on one
// registry get the same block.
func New(s *sched.Scheduler, cfg Config) (*Renderer, error) {
	if s == nil {
		return nil, errors.New("render: New: nil scheduler")
	}
	if cfg.MergeGrain < 0 || cfg.MergeTasks < 0 || cfg.Ranges < 0 || cfg.MinRange < 0 {
		return nil, fmt.Errorf("render: New: negative value in %+v", cfg)
	}
	if cfg.MergeTasks > MaxMergeTasks {
		return nil, fmt.Errorf("render: New: Config.MergeTasks %d exceeds MaxMergeTasks (%d)", cfg.MergeTasks, MaxMergeTasks)
	}
	if cfg.MergeGrain == 0 {
		cfg.MergeGrain = 4096
	}
	if cfg.MergeTasks == 0 {
		cfg.MergeTasks = min(2*s.Threads(), MaxMergeTasks)
	}
	if cfg.Ranges == 0 {
		cfg.Ranges = 4 * s.Threads()
	}
	if cfg.MinRange == 0 {
		cfg.MinRange = 64
	}
	r := &Renderer{s: s, cfg: cfg}
	funcs := [NumKernels]sched.KernelFunc{parseKernel, scatterKernel, stateScanKernel, recordKernel}
	var ks [NumKernels]sched.Kernel
	for i := range ks {
		ks[i] = sched.Kernel{Name: kernelNames[i], Kind: sched.Simple, CPU: funcs[i]}
	}
	first, err := s.Kernels().RegisterBlock("render", ks[:])
	if err != nil {
		return nil, fmt.Errorf("render: New: %w", err)
	}
	for i := range r.k {
		r.k[i] = first + sched.KernelID(i)
	}
	return r, nil
}

// fork runs kernel k over indices 0..n-1 as children of one join task
// and waits for them, helping to run them on c. When n is 1, parallel is
// false or the Renderer is serial, it runs them in order on c instead.
func (r *Renderer) fork(c *sched.Ctx, k sched.KernelID, n int, parallel bool, inline func(*sched.Ctx, int)) error {
	if n <= 1 || !parallel || r.serial {
		return runInline(c, n, inline)
	}
	r.task = sched.Task{}
	root, err := c.Create(&r.task)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var addErr error
	for i := range n {
		r.task = sched.Task{Kernel: k, Parent: root}
		r.task.Data.Data = r
		r.task.Data.Params[0] = uint32(i)
		if _, err := c.Add(&r.task); err != nil {
			addErr = err
			break
		}
	}
	if err := c.Run(root); err != nil && addErr == nil {
		addErr = err
	}
	if err := c.Wait(root); err != nil && addErr == nil {
		addErr = err
	}
	if addErr != nil {
		return fmt.Errorf("render: %w", addErr)
	}
	return nil
}

// runInline runs steps 0..n-1 on the caller, turning a panic (a
// Recorder's, say) into an error as the scheduler does for tasks.
func runInline(c *sched.Ctx, n int, f func(*sched.Ctx, int)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("render: %w: %v", sched.ErrKernelPanic, p)
		}
	}()
	for i := range n {
		f(c, i)
	}
	return nil
}

func parseKernel(c *sched.Ctx, d *sched.TaskData) error {
	d.Data.(*Renderer).parse(c, int(d.Params[0]))
	return nil
}

// MergeSort is step 2 of the design (package doc), merge-n-sort: it merges the contexts into one stream
// ordered by SortKey, stably (equal keys keep context order, then
// submission order), using the scheduler:
//
//  1. one task per context parses and validates its stream against reg,
//     collecting its packets' (key, location) items and key histograms;
//  2. a parallel LSD radix sort orders all items, one pass per key byte in
//     which keys differ, each pass a few tasks over blocks of the items,
//     the first pass reading the contexts' items in place (see sort.go).
//
// c is the calling scheduler thread (a registered thread, or the Ctx of the
// kernel calling MergeSort); it helps run the tasks while it waits. The
// contexts must be finished: every job that wrote one has completed.
//
// Bad input never stops the frame and never panics: overflowed contexts,
// corrupt streams (the rest of that context is dropped), malformed packets
// and draws naming unknown handles are dropped, counted in Stats, and
// reported as a *FrameError alongside the still-usable sorted stream.
// Other errors (nil arguments, a scheduler failure) return a nil *Sorted.
func (r *Renderer) MergeSort(c *sched.Ctx, ctxs []*RenderContext, reg *Registry) (*Sorted, error) {
	if c == nil || c.Scheduler() != r.s {
		return nil, errors.New("render: MergeSort: c must be a thread of the Renderer's scheduler")
	}
	if reg == nil {
		return nil, errors.New("render: MergeSort: nil Registry")
	}
	if len(ctxs) > MaxContexts {
		return nil, fmt.Errorf("render: MergeSort: %d contexts, at most %d", len(ctxs), MaxContexts)
	}
	for i, x := range ctxs {
		if x == nil {
			return nil, fmt.Errorf("render: MergeSort: context %d is nil", i)
		}
	}
	n := len(ctxs)
	r.ctxs = append(r.ctxs[:0], ctxs...)
	r.gens = grow(r.gens, n)
	for i, x := range ctxs {
		r.gens[i] = x.gen
	}
	r.reg = reg
	if len(r.per) < n {
		r.per = append(r.per, make([]ctxScratch, n-len(r.per))...)
	}
	r.sorted = Sorted{ctxs: r.ctxs, gens: r.gens}
	if n > 0 {
		size := 0
		for _, x := range ctxs {
			size += x.Len()
		}
		parallel := size >= r.cfg.MergeGrain*DrawRecordSize
		if err := r.fork(c, r.k[0], n, parallel, r.parse); err != nil {
			return nil, err
		}
	}

	st := &r.sorted.stats
	st.Contexts = n
	total, nprob := 0, 0
	var diff, first SortKey
	seen := false
	for i := range n {
		sc := &r.per[i]
		st.add(&sc.stats)
		nprob += sc.nprob
		if len(sc.a) == 0 {
			continue
		}
		total += len(sc.a)
		if !seen {
			first, seen = sc.a[0].key, true
		}
		diff |= sc.diff | (sc.a[0].key ^ first)
	}
	st.Packets = total
	if uint64(total) > math.MaxUint32 {
		return nil, fmt.Errorf("render: MergeSort: %d packets, at most %d", total, uint32(math.MaxUint32))
	}
	if err := r.sortPasses(c, total, diff); err != nil {
		return nil, err
	}
	r.sorted.items = r.rx.src[:total]
	if nprob == 0 {
		return &r.sorted, nil
	}
	fe := &FrameError{Stats: *st}
	for i := range n {
		sc := &r.per[i]
		k := min(sc.nprob, len(sc.problems))
		fe.Problems = append(fe.Problems, sc.problems[:k]...)
		fe.Omitted += sc.nprob - k
	}
	return &r.sorted, fe
}

// sizeProblem describes a packet of type what whose payload has size bytes
// instead of want.
func sizeProblem(what string, size, want int) Problem {
	return Problem{Kind: ErrPacketSize, Field: what, Value: uint64(size), Limit: uint64(want)}
}

// grow returns s with length n, reallocating only when it lacks capacity.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// parse parses and validates context i's packets into its scratch.
func (r *Renderer) parse(_ *sched.Ctx, i int) {
	sc := &r.per[i]
	sc.stats = Stats{}
	sc.nprob = 0
	ctx := r.ctxs[i]
	if d := ctx.Dropped(); d > 0 {
		sc.stats.Overflow = d
		sc.problem(Problem{Context: i, Offset: -1, Kind: ErrOverflow, Value: uint64(d)})
	}
	buf := ctx.Bytes()
	a := sc.a[:0]
	h := &sc.hist
	*h = [8][256]uint32{}
	var diff SortKey
	rd := evstream.NewReader(buf)
	var bad Problem // bad.Kind != nil: the packet is dropped, for the reason in bad
	for rd.Next() {
		pl := rd.Payload()
		off := rd.PayloadOffset()
		var kind uint8
		var key SortKey
		bad.Kind = nil
		switch rd.Type() {
		case TypeDraw:
			if len(pl) != drawSize {
				bad = sizeProblem("draw", len(pl), drawSize)
				break
			}
			d := (*DrawPacket)(unsafe.Pointer(&buf[off]))
			if r.reg.checkDraw(d, &bad) {
				kind, key = kindDraw, d.Key
				sc.stats.Draws++
			}
		case TypeState:
			if len(pl) != stateSize {
				bad = sizeProblem("state", len(pl), stateSize)
				break
			}
			s := (*StatePacket)(unsafe.Pointer(&buf[off]))
			if checkState(s, &bad) {
				kind, key = kindState, s.Key
				sc.stats.States++
			}
		case TypeJob:
			if len(pl) != jobSize {
				bad = sizeProblem("job", len(pl), jobSize)
				break
			}
			kind, key = kindJob, (*JobPacket)(unsafe.Pointer(&buf[off])).Key
			sc.stats.Jobs++
		default:
			sc.stats.Unknown++
			continue
		}
		if bad.Kind != nil {
			sc.stats.Invalid++
			bad.Context, bad.Offset = i, rd.Offset()
			sc.problem(bad)
			continue
		}
		a = append(a, item{key: key, off: uint32(off), ctx: uint16(i), kind: kind})
		diff |= key ^ a[0].key
		h[0][byte(key)]++
		h[1][byte(key>>8)]++
		h[2][byte(key>>16)]++
		h[3][byte(key>>24)]++
		h[4][byte(key>>32)]++
		h[5][byte(key>>40)]++
		h[6][byte(key>>48)]++
		h[7][byte(key>>56)]++
	}
	if err := rd.Err(); err != nil {
		off := rd.Consumed()
		var e *evstream.Error
		if errors.As(err, &e) {
			off = e.Offset
		}
		sc.stats.Corrupt++
		sc.problem(Problem{Context: i, Offset: off, Kind: ErrCorrupt, Cause: err})
	}
	sc.a = a
	sc.diff = diff
}

// Sorted is the merged, sorted packet stream of one frame: step 3's input.
// It refers to packets in place in their contexts and is valid until the
// Renderer's next MergeSort or until any of the contexts is reset.
type Sorted struct {
	items []item
	ctxs  []*RenderContext
	gens  []uint64
	stats Stats
}

// ErrStale is returned by Record for a Sorted whose contexts were reset or
// loaded after MergeSort: its packet locations no longer mean anything.
var ErrStale = errors.New("render: sorted stream is stale: a context was reset after MergeSort")

// Valid reports whether none of the contexts was reset or loaded since the
// stream was sorted. Packet accessors on a stale Sorted return garbage or
// panic; Record checks Valid first.
func (s *Sorted) Valid() bool {
	for i, c := range s.ctxs {
		if c.gen != s.gens[i] {
			return false
		}
	}
	return true
}

// Len returns the number of packets.
func (s *Sorted) Len() int { return len(s.items) }

// Stats returns what MergeSort counted.
func (s *Sorted) Stats() Stats { return s.stats }

// Key returns packet i's sort key.
func (s *Sorted) Key(i int) SortKey { return s.items[i].key }

// Type returns packet i's type: TypeDraw, TypeState or TypeJob.
func (s *Sorted) Type(i int) evstream.Type {
	switch s.items[i].kind {
	case kindDraw:
		return TypeDraw
	case kindState:
		return TypeState
	}
	return TypeJob
}

// Source returns the context index and the byte offset of packet i's
// payload in that context's stream.
func (s *Sorted) Source(i int) (context, offset int) {
	it := &s.items[i]
	return int(it.ctx), int(it.off)
}

func (s *Sorted) ptr(it *item) unsafe.Pointer {
	return unsafe.Pointer(&s.ctxs[it.ctx].w.Bytes()[it.off])
}

// Draw returns packet i if it is a draw, else nil. It aliases the context.
func (s *Sorted) Draw(i int) *DrawPacket {
	if it := &s.items[i]; it.kind == kindDraw {
		return (*DrawPacket)(s.ptr(it))
	}
	return nil
}

// State returns packet i if it is a state change, else nil.
func (s *Sorted) State(i int) *StatePacket {
	if it := &s.items[i]; it.kind == kindState {
		return (*StatePacket)(s.ptr(it))
	}
	return nil
}

// Job returns packet i if it is a render job, else nil.
func (s *Sorted) Job(i int) *JobPacket {
	if it := &s.items[i]; it.kind == kindJob {
		return (*JobPacket)(s.ptr(it))
	}
	return nil
}
