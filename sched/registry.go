package sched

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Rate says how a stream's element count relates to a task's work items.
type Rate uint8

const (
	// PerItem streams have one element per work item, scaled by the
	// kernel's Factor on the many side of a Reduce (inputs) or Expand
	// (outputs) kernel. They are split with the task.
	PerItem Rate = iota
	// Whole streams are read in full by every range (lookup tables, bone
	// palettes); their count is free and they are never split.
	Whole
)

// StreamSpec declares one input or output stream of a kernel.
type StreamSpec struct {
	Name   string
	Stride uint32 // element size in bytes; 0 accepts any
	Rate   Rate
}

// KernelFunc is a kernel's CPU implementation. It processes the work items
// [t.Begin, t.End) and may add child tasks or wait through c. It must not
// retain t or c after returning. A returned error (or a panic) fails the task.
type KernelFunc func(c *Ctx, t *TaskData) error

// GPUBinding is a kernel's GPU version, opaque to the scheduler: the GPU
// executor knows its type (package gpu runs a *bind.Binding, from package
// gpu/bind, which is pure Go). The scheduler only asks it, when the kernel
// is registered, whether it matches the kernel's declared streams; so the
// scheduler's contract with executors depends on no GPU package.
type GPUBinding interface {
	// CheckStreams returns an error naming the binding and the stream if
	// the binding does not match the kernel's input and output streams.
	CheckStreams(in, out []StreamSpec) error
}

// Kernel is a registered kernel: a name, its data shape, a pure-Go CPU
// implementation, and optionally a GPU binding that the GPU executor runs
// (package gpu runs a *bind.Binding of package gpu/bind).
type Kernel struct {
	Name   string
	Kind   Kind
	Factor uint32 // Reduce/Expand ratio; ignored (1) otherwise
	In     []StreamSpec
	Out    []StreamSpec
	Grain  uint32 // default split grain in work items (0 = 1024)
	CPU    KernelFunc
	// GPU is the kernel's compute shader and how it binds the streams
	// (a *bind.Binding for package gpu's executor); nil means the kernel
	// has no GPU version. Register checks it against In and Out
	// (GPUBinding.CheckStreams; for a *bind.Binding: bindings, storage or
	// uniform, element sizes, push constants, workgroup size) and refuses
	// a mismatch.
	GPU GPUBinding
	// SPU, when set, is an opaque binding for the local-store executor.
	SPU any
}

// Registry maps kernel IDs to kernels. Lookups are lock-free; registration
// takes a lock and publishes a new table (copy on write), so kernels can be
// registered while schedulers run. The zero value is not usable: use
// NewRegistry.
//
// The ID space has two parts, so that libraries sharing a registry never
// pick the same ID:
//
//   - IDs 1 to FirstHandedID-1 are fixed: their users choose them
//     (Register), as package kernels does for its constants and a program
//     may for its own kernels. Two users of one fixed ID collide, and
//     Register refuses the second naming both kernels.
//   - IDs from FirstHandedID up are handed out by the registry: one per
//     call (RegisterNext), or a block of consecutive IDs per library
//     (RegisterBlock), the lowest that is free. A library that takes its
//     IDs this way never meets another library's, fixed or handed out, in
//     whatever order they register, and no code or test needs to know the
//     number it got: it uses the ID returned.
//
// Register still accepts a handed-out range ID (a program's explicit
// choice); the registry then skips it when it hands out IDs, and refuses
// it if it was handed out already. The rejected alternatives: numbers
// agreed by hand between libraries (each had to know the others' ranges,
// and a test pinned them), and handing out IDs from the top of the space
// down (Lookup's table is dense, indexed by ID: the high IDs would make
// every table tens of thousands of entries long).
type Registry struct {
	mu    sync.Mutex
	table atomic.Pointer[[]*Kernel]
	// blocks maps an owner of RegisterBlock to its block (under mu).
	blocks map[string]idBlock

	graph Kernel // the frame graphs' runner, under KernelGraph
}

// idBlock is a block handed out by RegisterBlock: n IDs from first.
type idBlock struct {
	first KernelID
	n     int
}

// FirstHandedID is the first ID the registry hands out (RegisterNext,
// RegisterBlock); the IDs below it are the fixed ones that their users
// choose (see Registry).
const FirstHandedID KernelID = 256

// KernelGraph is the frame graphs' runner kernel (Graph), always
// registered, like KernelNone; Register refuses the ID. It is the highest
// ID, looked up only where the table ends, so it costs other lookups
// nothing and is never handed out.
const KernelGraph KernelID = ^KernelID(0)

// DefaultGrain is the split grain used when neither task nor kernel sets one.
const DefaultGrain = 1024

// errIDTaken is wrapped by Register's refusal of an ID already in use.
var errIDTaken = errors.New("ID already used")

// ErrUnknownKernel is wrapped by errors about unregistered kernel IDs.
var ErrUnknownKernel = errors.New("unknown kernel")

// NewRegistry returns a registry holding only KernelNone.
func NewRegistry() *Registry {
	r := &Registry{}
	t := []*Kernel{{Name: "none", Kind: Simple}}
	r.table.Store(&t)
	r.graph = Kernel{Name: "sched.graph", Kind: Simple, Factor: 1, Grain: DefaultGrain, CPU: graphRun}
	return r
}

// Register adds k under id. It fails if id is taken (the error names both
// kernels), k has no CPU implementation, k's declaration is inconsistent
// (a Simple kernel that declares streams, a Reduce or Expand kernel
// without a Factor, more than MaxStreams streams), or its GPU binding does
// not match the declaration (the error names the binding and the stream).
// A library that does not need a fixed ID uses RegisterNext or
// RegisterBlock instead.
func (r *Registry) Register(id KernelID, k Kernel) error {
	kc, err := prepare(id, k)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.table.Load()
	if int(id) < len(old) && old[id] != nil {
		return fmt.Errorf("sched: register kernel %d %q: %w by %q", id, k.Name, errIDTaken, old[id].Name)
	}
	t := make([]*Kernel, max(len(old), int(id)+1))
	copy(t, old)
	t[id] = kc
	r.table.Store(&t)
	return nil
}

// prepare checks k for registration under id and returns the copy to
// publish, with its defaults filled in.
func prepare(id KernelID, k Kernel) (*Kernel, error) {
	if id == KernelNone {
		return nil, fmt.Errorf("sched: register %q: kernel ID 0 is reserved for KernelNone", k.Name)
	}
	if id == KernelGraph {
		return nil, fmt.Errorf("sched: register %q: kernel ID %d is reserved for KernelGraph", k.Name, id)
	}
	if k.CPU == nil {
		return nil, fmt.Errorf("sched: register kernel %d %q: no CPU implementation", id, k.Name)
	}
	if len(k.In) > MaxStreams || len(k.Out) > MaxStreams {
		return nil, fmt.Errorf("sched: register kernel %d %q: %d inputs and %d outputs; at most %d each", id, k.Name, len(k.In), len(k.Out), MaxStreams)
	}
	switch k.Kind {
	case Simple:
		// Add refuses streams on a Simple task (only the header, Params and
		// Data are copied), so declared streams could never reach the kernel.
		if len(k.In) != 0 || len(k.Out) != 0 {
			return nil, fmt.Errorf("sched: register kernel %d %q: a simple kernel takes no streams, but %d inputs and %d outputs are declared; use Kind Streaming", id, k.Name, len(k.In), len(k.Out))
		}
		k.Factor = 1
	case Streaming:
		k.Factor = 1
	case Reduce, Expand:
		if k.Factor == 0 {
			return nil, fmt.Errorf("sched: register kernel %d %q: %v kernel needs Factor > 0", id, k.Name, k.Kind)
		}
	default:
		return nil, fmt.Errorf("sched: register kernel %d %q: invalid kind %v", id, k.Name, k.Kind)
	}
	if k.Grain == 0 {
		k.Grain = DefaultGrain
	}
	if k.GPU != nil {
		if err := k.GPU.CheckStreams(k.In, k.Out); err != nil {
			return nil, fmt.Errorf("sched: register kernel %d %q: GPU binding: %w", id, k.Name, err)
		}
	}
	return &k, nil
}

// RegisterNext registers k under an ID the registry hands out (the lowest
// free one from FirstHandedID up) and returns it. Each call takes a new
// ID. It refuses what Register refuses.
func (r *Registry) RegisterNext(k Kernel) (KernelID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.handOut([]Kernel{k})
}

// RegisterBlock registers a library's kernels under consecutive IDs the
// registry hands out (the lowest free run from FirstHandedID up) and
// returns the first: ks[i] gets first+i. It registers all of them or, on
// any refusal (see Register), none.
//
// The block belongs to owner (the library's name, not empty): a later
// call with the same owner registers nothing and returns the same first
// ID, so independent users of one library in one registry share its
// kernels (two Renderers of a scheduler, say) without a race between
// them. That call must name the same kernels, in the same order;
// otherwise it fails naming owner and the first kernel that differs.
func (r *Registry) RegisterBlock(owner string, ks []Kernel) (KernelID, error) {
	if owner == "" {
		return 0, errors.New("sched: RegisterBlock: no owner named")
	}
	if len(ks) == 0 {
		return 0, fmt.Errorf("sched: RegisterBlock %q: no kernels", owner)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.blocks[owner]; ok {
		t := *r.table.Load()
		if b.n != len(ks) {
			return 0, fmt.Errorf("sched: RegisterBlock %q: %d kernels, but its block in this registry holds %d (IDs %d-%d)", owner, len(ks), b.n, b.first, b.first+KernelID(b.n-1))
		}
		for i, k := range ks {
			if have := t[b.first+KernelID(i)]; have.Name != k.Name {
				return 0, fmt.Errorf("sched: RegisterBlock %q: kernel %d is %q, but ID %d of its block holds %q", owner, i, k.Name, b.first+KernelID(i), have.Name)
			}
		}
		return b.first, nil
	}
	first, err := r.handOut(ks)
	if err != nil {
		return 0, fmt.Errorf("%w (RegisterBlock %q)", err, owner)
	}
	if r.blocks == nil {
		r.blocks = make(map[string]idBlock)
	}
	r.blocks[owner] = idBlock{first, len(ks)}
	return first, nil
}

// handOut registers ks under the lowest run of len(ks) free IDs from
// FirstHandedID up and returns its first ID. r.mu is held.
func (r *Registry) handOut(ks []Kernel) (KernelID, error) {
	old := *r.table.Load()
	first, run := int(FirstHandedID), 0
	for id := first; id < len(old) && run < len(ks); id++ {
		if old[id] != nil {
			first, run = id+1, 0
		} else {
			run++
		}
	}
	// IDs at and past the table's end are free, up to KernelGraph.
	if first+len(ks) > int(KernelGraph) {
		return 0, fmt.Errorf("sched: register %q: no run of %d free kernel IDs is left to hand out (IDs %d-%d)", ks[0].Name, len(ks), FirstHandedID, KernelGraph-1)
	}
	kcs := make([]*Kernel, len(ks))
	for i, k := range ks {
		kc, err := prepare(KernelID(first+i), k)
		if err != nil {
			return 0, err
		}
		kcs[i] = kc
	}
	t := make([]*Kernel, max(len(old), first+len(ks)))
	copy(t, old)
	copy(t[first:], kcs)
	r.table.Store(&t)
	return KernelID(first), nil
}

// Lookup returns the kernel registered under id, or nil.
func (r *Registry) Lookup(id KernelID) *Kernel {
	t := *r.table.Load()
	if int(id) < len(t) {
		return t[id]
	}
	if id == KernelGraph {
		return &r.graph
	}
	return nil
}

// Each calls f for every registered kernel in ID order.
func (r *Registry) Each(f func(KernelID, *Kernel)) {
	for i, k := range *r.table.Load() {
		if k != nil {
			f(KernelID(i), k)
		}
	}
}

// Validate checks a task's data against the kernel's declaration: stream
// counts and strides must match the element count. It is called by Add.
func (k *Kernel) Validate(id KernelID, d *TaskData) error {
	if k.Kind == Simple {
		// Simple kernels get kernel data only: streams would be dropped.
		for i := range MaxStreams {
			if d.In[i].Count != 0 || d.In[i].Bytes != nil || d.In[i].Buffer != 0 ||
				d.Out[i].Count != 0 || d.Out[i].Bytes != nil || d.Out[i].Buffer != 0 {
				return fmt.Errorf("sched: kernel %d %q: simple kernels take no streams (stream %d given); use Data or a streaming kernel", id, k.Name, i)
			}
		}
		return nil
	}
	for i := range MaxStreams {
		if err := k.checkStream("input", i, k.In, &d.In[i], d.Elements, k.Kind == Reduce); err != nil {
			return fmt.Errorf("sched: kernel %d %q: %w", id, k.Name, err)
		}
		if err := k.checkStream("output", i, k.Out, &d.Out[i], d.Elements, k.Kind == Expand); err != nil {
			return fmt.Errorf("sched: kernel %d %q: %w", id, k.Name, err)
		}
	}
	return nil
}

// noStreams reports whether d names no stream (no count, memory or
// buffer in any of them), as Validate's loop for a simple kernel does,
// without a branch per field. Small enough to inline into Add.
func noStreams(d *TaskData) bool {
	var x uintptr
	for i := range MaxStreams {
		in, out := &d.In[i], &d.Out[i]
		x |= uintptr(unsafe.Pointer(unsafe.SliceData(in.Bytes))) | uintptr(in.Count) | uintptr(in.Buffer)
		x |= uintptr(unsafe.Pointer(unsafe.SliceData(out.Bytes))) | uintptr(out.Count) | uintptr(out.Buffer)
	}
	return x == 0
}

func (k *Kernel) checkStream(dir string, i int, specs []StreamSpec, s *Stream, n uint32, scaled bool) error {
	if i >= len(specs) {
		if s.Count != 0 || s.Bytes != nil || s.Buffer != 0 {
			return fmt.Errorf("%s stream %d given but the kernel declares %d", dir, i, len(specs))
		}
		return nil
	}
	sp := specs[i]
	if s.Bytes == nil && s.Buffer == 0 && s.Count > 0 {
		return fmt.Errorf("%s stream %d (%s) has count %d but no memory", dir, i, sp.Name, s.Count)
	}
	if sp.Stride != 0 && s.Stride != sp.Stride {
		return fmt.Errorf("%s stream %d (%s) has stride %d, kernel needs %d", dir, i, sp.Name, s.Stride, sp.Stride)
	}
	if !s.Valid() {
		return fmt.Errorf("%s stream %d (%s) has %d bytes, fewer than count %d x stride %d", dir, i, sp.Name, len(s.Bytes), s.Count, s.Stride)
	}
	if sp.Rate == PerItem {
		want := uint64(n)
		if scaled {
			want *= uint64(k.Factor)
		}
		if uint64(s.Count) != want {
			return fmt.Errorf("%s stream %d (%s) has %d elements, task needs %d (elements %d, %v factor %d)", dir, i, sp.Name, s.Count, want, n, k.Kind, k.Factor)
		}
	}
	return nil
}
