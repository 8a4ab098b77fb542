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
type Registry struct {
	mu    sync.Mutex
	table atomic.Pointer[[]*Kernel]

	graph Kernel // the frame graphs' runner, under KernelGraph
}

// KernelGraph is the frame graphs' runner kernel (Graph), always
// registered, like KernelNone; Register refuses the ID. It is the highest
// ID, looked up only where the table ends, so it costs other lookups
// nothing and takes no ID a library would pick.
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

// Register adds k under id. It fails if id is taken, k has no CPU
// implementation, k's declaration is inconsistent (a Simple kernel that
// declares streams, a Reduce or Expand kernel without a Factor, more than
// MaxStreams streams), or its GPU binding does
// not match the declaration (the error names the binding and the stream).
func (r *Registry) Register(id KernelID, k Kernel) error {
	if id == KernelNone {
		return fmt.Errorf("sched: register %q: kernel ID 0 is reserved for KernelNone", k.Name)
	}
	if id == KernelGraph {
		return fmt.Errorf("sched: register %q: kernel ID %d is reserved for KernelGraph", k.Name, id)
	}
	if k.CPU == nil {
		return fmt.Errorf("sched: register kernel %d %q: no CPU implementation", id, k.Name)
	}
	if len(k.In) > MaxStreams || len(k.Out) > MaxStreams {
		return fmt.Errorf("sched: register kernel %d %q: %d inputs and %d outputs; at most %d each", id, k.Name, len(k.In), len(k.Out), MaxStreams)
	}
	switch k.Kind {
	case Simple:
		// Add refuses streams on a Simple task (only the header, Params and
		// Data are copied), so declared streams could never reach the kernel.
		if len(k.In) != 0 || len(k.Out) != 0 {
			return fmt.Errorf("sched: register kernel %d %q: a simple kernel takes no streams, but %d inputs and %d outputs are declared; use Kind Streaming", id, k.Name, len(k.In), len(k.Out))
		}
		k.Factor = 1
	case Streaming:
		k.Factor = 1
	case Reduce, Expand:
		if k.Factor == 0 {
			return fmt.Errorf("sched: register kernel %d %q: %v kernel needs Factor > 0", id, k.Name, k.Kind)
		}
	default:
		return fmt.Errorf("sched: register kernel %d %q: invalid kind %v", id, k.Name, k.Kind)
	}
	if k.Grain == 0 {
		k.Grain = DefaultGrain
	}
	if k.GPU != nil {
		if err := k.GPU.CheckStreams(k.In, k.Out); err != nil {
			return fmt.Errorf("sched: register kernel %d %q: GPU binding: %w", id, k.Name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.table.Load()
	if int(id) < len(old) && old[id] != nil {
		return fmt.Errorf("sched: register kernel %d %q: %w by %q", id, k.Name, errIDTaken, old[id].Name)
	}
	n := len(old)
	if int(id) >= n {
		n = int(id) + 1
	}
	t := make([]*Kernel, n)
	copy(t, old)
	kc := k
	t[id] = &kc
	r.table.Store(&t)
	return nil
}

// RegisterNext registers k under the lowest free ID and returns it, so
// libraries that share a registry never pick the same ID by hand. It
// refuses what Register refuses.
func (r *Registry) RegisterNext(k Kernel) (KernelID, error) {
	for {
		r.mu.Lock()
		t := *r.table.Load()
		id := KernelID(len(t))
		for i := 1; i < len(t); i++ {
			if t[i] == nil {
				id = KernelID(i)
				break
			}
		}
		r.mu.Unlock()
		if int(id) == len(t) && len(t) >= int(KernelGraph) {
			return 0, fmt.Errorf("sched: register %q: every kernel ID is taken", k.Name)
		}
		err := r.Register(id, k)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, errIDTaken) {
			return 0, err
		}
		// Another Register took id between the look and the claim: again.
	}
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
