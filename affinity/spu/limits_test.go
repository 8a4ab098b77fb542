package spu

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// TestNewRefusesOptionsBeyondBounds: a local store or a unit count beyond
// MaxLocalStore or MaxUnits, alone or multiplied, is refused by New with an
// error naming the field and the bound, before the stores are allocated
// (an allocation of that size would end the test process).
func TestNewRefusesOptionsBeyondBounds(t *testing.T) {
	bound := strconv.Itoa(MaxLocalStore)
	for _, c := range []struct {
		opts  Options
		names []string
	}{
		{Options{LocalStore: MaxLocalStore + 1}, []string{"LocalStore", strconv.Itoa(MaxLocalStore + 1), bound}},
		{Options{LocalStore: math.MaxInt}, []string{"LocalStore", strconv.Itoa(math.MaxInt), bound}},
		{Options{Units: MaxUnits + 1}, []string{"Units", strconv.Itoa(MaxUnits + 1), strconv.Itoa(MaxUnits)}},
		{Options{Units: math.MaxInt, LocalStore: 4096}, []string{"Units", strconv.Itoa(math.MaxInt), strconv.Itoa(MaxUnits)}},
		// Each field within its bound, the two together beyond MaxLocalStore.
		{Options{Units: 2, LocalStore: MaxLocalStore/2 + 1}, []string{"Units 2", "LocalStore", bound}},
		{Options{Units: MaxUnits, LocalStore: DefaultLocalStore + 16}, []string{"Units", "LocalStore", bound}},
	} {
		x, err := New(c.opts)
		if err == nil {
			x.Close()
			t.Errorf("New(%+v) accepted", c.opts)
			continue
		}
		for _, s := range c.names {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("New(%+v): %q does not mention %q", c.opts, err, s)
			}
		}
	}
	// MaxUnits itself is accepted (small stores keep the test light).
	x, err := New(Options{Units: MaxUnits, LocalStore: 4096})
	if err != nil {
		t.Fatalf("New with MaxUnits units: %v", err)
	}
	if len(x.units) != MaxUnits {
		t.Errorf("New with MaxUnits units started %d", len(x.units))
	}
	x.Close()
}

// needRE reads the misfit error's figure.
var needRE = regexp.MustCompile(`need at least (\d+)\)`)

// misfitTask builds a streaming kernel and a task of 10 items with items
// per-item streams (unaligned strides, in the order In 0, Out 0, In 1, Out
// 1, ...) and, when whole, a Whole input after the per-item inputs. It
// needs a free input slot for the Whole stream: (items+1)/2 < MaxStreams.
func misfitTask(items int, whole bool) (*sched.Kernel, *sched.TaskData) {
	nIn := (items + 1) / 2
	if whole {
		nIn++
	}
	k := &sched.Kernel{Name: "misfit", Kind: sched.Streaming,
		In: make([]sched.StreamSpec, nIn), Out: make([]sched.StreamSpec, items/2),
		CPU: func(*sched.Ctx, *sched.TaskData) error { return nil }}
	d := &sched.TaskData{Elements: 10, End: 10}
	for i := range items {
		stride := uint32(4100 + 13*i)
		s := sched.Stream{Bytes: make([]byte, 10*stride), Stride: stride, Count: 10}
		if i%2 == 0 {
			k.In[i/2], d.In[i/2] = sched.StreamSpec{Name: fmt.Sprint("in", i/2), Stride: stride}, s
		} else {
			k.Out[i/2], d.Out[i/2] = sched.StreamSpec{Name: fmt.Sprint("out", i/2), Stride: stride}, s
		}
	}
	if whole {
		last := nIn - 1
		k.In[last] = sched.StreamSpec{Name: "table", Stride: 1, Rate: sched.Whole}
		d.In[last] = sched.Stream{Bytes: make([]byte, 5001), Stride: 1, Count: 5001}
	}
	return k, d
}

// TestMisfitNeedIsExact: the "need at least" figure of a misfit error is
// the smallest local store Fits accepts, for zero to eight per-item
// streams with and without a Whole stream.
func TestMisfitNeedIsExact(t *testing.T) {
	for items := 0; items <= 2*sched.MaxStreams; items++ {
		for _, whole := range []bool{false, true} {
			if items == 0 && !whole {
				continue // no streams: fits any store
			}
			if whole && (items+1)/2 >= sched.MaxStreams {
				continue // no input slot left for the Whole stream
			}
			k, d := misfitTask(items, whole)
			var pl spuPlan
			err := planSPU(1024, 0, k, d, &pl, true)
			if !errors.Is(err, ErrMisfit) {
				t.Fatalf("%d per-item streams, whole %v, store 1024: %v, want ErrMisfit", items, whole, err)
			}
			m := needRE.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("%d per-item streams, whole %v: %q gives no figure", items, whole, err)
			}
			need, _ := strconv.Atoi(m[1])
			if need <= 4096 {
				t.Fatalf("%d per-item streams, whole %v: need %d leaves no smaller store to try", items, whole, need)
			}
			for _, c := range []struct {
				ls   int
				fits bool
			}{{need, true}, {need - 1, false}} {
				x, err := New(Options{LocalStore: c.ls})
				if err != nil {
					t.Fatal(err)
				}
				if got := x.Fits(k, d); got != c.fits {
					t.Errorf("%d per-item streams, whole %v: Fits with a %d-byte store = %v, want %v (error said need at least %d)", items, whole, c.ls, got, c.fits, need)
				}
				x.Close()
			}
		}
	}
}

// TestMisfitNeedRuns: a task run in a store of exactly the figure its
// misfit error gives runs (single-buffered), and one byte less fails with
// that figure.
func TestMisfitNeedRuns(t *testing.T) {
	reg := sched.NewRegistry()
	k, d := misfitTask(3, true)
	must(t, reg.Register(40, *k))
	var pl spuPlan
	m := needRE.FindStringSubmatch(fmt.Sprint(planSPU(1024, 40, k, d, &pl, true)))
	if m == nil {
		t.Fatal("no misfit figure")
	}
	need, _ := strconv.Atoi(m[1])
	task := sched.Task{Kernel: 40, Affinity: sched.SPU}
	task.Data.Elements = d.Elements
	task.Data.In, task.Data.Out = d.In, d.Out

	x, mctx := spuSched(t, reg, Options{LocalStore: need - 1}, nil)
	err := runTask(t, mctx, task)
	if !errors.Is(err, ErrMisfit) || !strings.Contains(err.Error(), m[0]) {
		t.Fatalf("store %d: %v, want ErrMisfit saying %q", need-1, err, m[0])
	}
	if st := x.Stats(); st.Failed != 1 {
		t.Fatalf("store %d: stats %+v, want one failed job", need-1, st)
	}

	x, mctx = spuSched(t, reg, Options{LocalStore: need}, nil)
	if err := runTask(t, mctx, task); err != nil {
		t.Fatalf("store %d: %v", need, err)
	}
	if st := x.Stats(); st.Jobs != 1 || st.SingleBuffered != 1 || st.Chunks != uint64(d.Elements) {
		t.Fatalf("store %d: stats %+v, want one single-buffered job of one item per chunk", need, st)
	}
}
