package sched

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// The race check against a model written here: random graphs of streaming
// tasks and joins (parents, dependencies, held tasks Run later) over two
// host arrays and two device buffers, with ranges that overlap and ranges
// that don't. Nothing finishes while a graph is built except what fails
// (a refused Run, and what depends on a failed task), so the model knows
// which tasks are live. For each task checked (Add, or Run of a held one)
// the model builds the start/end events of the live tasks and their edges
// (S(T) before E(T), E(child) before E(parent), E(dependency) before S(T)),
// finds the ordered pairs by depth-first search, and the overlapping bytes
// byte by byte; the scheduler must refuse exactly when the model finds a
// hazard.

const (
	kRaceModel KernelID = 3
)

const (
	raceSpaces  = 4 // 0, 1: host arrays; 2, 3: buffers 1, 2
	raceSpaceSz = 64
)

type rmStream struct {
	space, lo, hi int // bytes [lo, hi) of space
	write         bool
}

type rmTask struct {
	id      TaskID
	parent  int // model index, -1 none
	dep     int
	join    bool
	held    bool // made with Create, not Run yet
	started bool // Add, or a Run that was not refused
	refused bool // Run refused: failed
	done    bool
	streams []rmStream
}

type raceModel struct {
	tasks []*rmTask
}

func (m *raceModel) live(i int) bool { return i >= 0 && !m.tasks[i].done }

// settle marks done what failed and whose children are done.
func (m *raceModel) settle() {
	for changed := true; changed; {
		changed = false
		for i, t := range m.tasks {
			if t.done {
				continue
			}
			own := t.refused || (t.started && t.dep >= 0 && m.tasks[t.dep].done)
			if !own {
				continue
			}
			kidsDone := true
			for _, k := range m.tasks {
				if k.parent == i && !k.done {
					kidsDone = false
					break
				}
			}
			if kidsDone {
				t.done, changed = true, true
			}
		}
	}
}

// reaches reports whether event E(from) precedes S(to) among live tasks.
func (m *raceModel) reaches(from, to int) bool {
	n := len(m.tasks)
	seen := make([]bool, 2*n) // 2i: S(i), 2i+1: E(i)
	var dfs func(v int) bool
	dfs = func(v int) bool {
		if seen[v] {
			return false
		}
		seen[v] = true
		i := v / 2
		if v == 2*to {
			return true
		}
		if v%2 == 0 { // S(i) -> E(i)
			return dfs(2*i + 1)
		}
		if p := m.tasks[i].parent; m.live(p) && dfs(2*p+1) {
			return true
		}
		for j, t := range m.tasks {
			if t.dep == i && m.live(j) && dfs(2*j) {
				return true
			}
		}
		return false
	}
	return dfs(2*from + 1)
}

func overlapBytes(a, b rmStream) bool {
	if a.space != b.space || !(a.write || b.write) {
		return false
	}
	in := make([]bool, max(a.hi, b.hi))
	for i := a.lo; i < a.hi; i++ {
		in[i] = true
	}
	for i := b.lo; i < b.hi; i++ {
		if in[i] {
			return true
		}
	}
	return false
}

// hazard: does task y race a live started task?
func (m *raceModel) hazard(y int) bool {
	yt := m.tasks[y]
	for x, xt := range m.tasks {
		if x == y || xt.done || !xt.started || len(xt.streams) == 0 {
			continue
		}
		over := false
		for _, a := range yt.streams {
			for _, b := range xt.streams {
				over = over || overlapBytes(a, b)
			}
		}
		if over && !m.reaches(x, y) && !m.reaches(y, x) {
			return true
		}
	}
	return false
}

type raceCounts struct {
	graphs, tasks, checks, hazards, falseAlarms, misses, otherErrs int
}

func TestRaceModel(t *testing.T) {
	graphs := 600
	if testing.Short() || raceDetector {
		graphs = 150 // the race detector makes each check many times slower
	}
	rng := rand.New(rand.NewPCG(26, 2026))
	var n raceCounts
	for range graphs {
		raceModelGraph(t, rng, &n)
		if t.Failed() {
			break
		}
	}
	t.Logf("graphs %d, tasks %d, checks %d, hazards %d, false alarms %d, misses %d (other refusals %d)",
		n.graphs, n.tasks, n.checks, n.hazards, n.falseAlarms, n.misses, n.otherErrs)
	if n.falseAlarms != 0 || n.misses != 0 {
		t.Fatalf("false alarms %d, misses %d", n.falseAlarms, n.misses)
	}
	if n.hazards < graphs/2 || n.checks-n.hazards < graphs {
		t.Fatalf("too few hazards (%d) or clean checks (%d): the graphs test little", n.hazards, n.checks-n.hazards)
	}
}

func raceModelGraph(t *testing.T, rng *rand.Rand, n *raceCounts) {
	release := make(chan struct{})
	reg := NewRegistry()
	must(t, reg.Register(kRaceModel, Kernel{Name: "model", Kind: Streaming,
		In:  []StreamSpec{{Name: "a", Rate: Whole}, {Name: "b", Rate: Whole}},
		Out: []StreamSpec{{Name: "c", Rate: Whole}, {Name: "d", Rate: Whole}},
		CPU: func(*Ctx, *TaskData) error { <-release; return nil }}))
	s, err := New(Config{Workers: 2, PoolSize: 256, Kernels: reg, CheckRaces: true})
	must(t, err)
	defer s.Close()
	defer close(release)
	var host [2][raceSpaceSz]byte

	m := &raceModel{}
	g, err := s.Create(&Task{})
	must(t, err)
	m.tasks = append(m.tasks, &rmTask{id: g, parent: -1, dep: -1, join: true, held: true})
	pickLive := func() int {
		var l []int
		for i, tk := range m.tasks {
			if !tk.done {
				l = append(l, i)
			}
		}
		return l[rng.IntN(len(l))]
	}
	// pickDep: a live task that is not parent nor one of its ancestors
	// (Add refuses those), or -1.
	pickDep := func(parent int) int {
		for range 4 {
			d := pickLive()
			anc := false
			for p := parent; p >= 0; p = m.tasks[p].parent {
				anc = anc || p == d
			}
			if !anc {
				return d
			}
		}
		return -1
	}
	idOf := func(i int) TaskID {
		if i < 0 {
			return NoTask
		}
		return m.tasks[i].id
	}
	check := func(y int, err error) {
		n.checks++
		want := m.hazard(y)
		got := errors.Is(err, ErrRace)
		if want {
			n.hazards++
		}
		switch {
		case got && !want:
			n.falseAlarms++
			t.Errorf("false alarm on task %d: %v", y, err)
		case want && !got:
			n.misses++
			t.Errorf("missed hazard of task %d (err %v)", y, err)
		}
	}
	n.graphs++
	ops := 8 + rng.IntN(32)
	for range ops {
		switch r := rng.IntN(100); {
		case r < 60: // a streaming task
			mt := &rmTask{parent: -1, dep: -1}
			if rng.IntN(2) == 0 {
				mt.parent = pickLive()
			}
			if rng.IntN(10) < 7 {
				mt.dep = pickDep(mt.parent)
			}
			mt.held = rng.IntN(5) == 0
			tk := &Task{Kernel: kRaceModel, Parent: idOf(mt.parent), Dependency: idOf(mt.dep)}
			tk.Data.Elements = 1
			for k := range 2 * MaxStreams {
				if k%MaxStreams >= 2 || rng.IntN(3) == 0 {
					continue
				}
				st := &tk.Data.In[k%MaxStreams]
				write := k >= MaxStreams
				if write {
					st = &tk.Data.Out[k-MaxStreams]
				}
				lo := rng.IntN(raceSpaceSz - 1)
				hi := min(raceSpaceSz, lo+1+rng.IntN(16))
				switch kind := rng.IntN(3); kind {
				case 0: // host
					a := rng.IntN(2)
					*st = Stream{Bytes: host[a][lo:hi], Stride: 1, Count: uint32(hi - lo)}
					mt.streams = append(mt.streams, rmStream{a, lo, hi, write})
				case 1: // device: Count*Stride bytes from Offset
					b := rng.IntN(2)
					stride := 1 + rng.IntN(4)
					count := max(1, (hi-lo)/stride)
					*st = Stream{Buffer: BufferID(b + 1), Offset: uint64(lo), Stride: uint32(stride), Count: uint32(count)}
					mt.streams = append(mt.streams, rmStream{2 + b, lo, lo + count*stride, write})
				case 2: // both: host bytes and a buffer range
					a, b := rng.IntN(2), rng.IntN(2)
					count := rng.IntN(hi - lo + 1)
					off := rng.IntN(raceSpaceSz - count + 1)
					*st = Stream{Bytes: host[a][lo:hi], Stride: 1, Count: uint32(count), Buffer: BufferID(b + 1), Offset: uint64(off)}
					mt.streams = append(mt.streams, rmStream{a, lo, hi, write})
					if count > 0 {
						mt.streams = append(mt.streams, rmStream{2 + b, off, off + count, write})
					}
				}
			}
			var id TaskID
			if mt.held {
				id, err = s.Create(tk)
			} else {
				id, err = s.Add(tk)
			}
			if err != nil && !errors.Is(err, ErrRace) {
				if n.otherErrs < 3 {
					t.Logf("other: %v", err)
				}
				n.otherErrs++
				continue
			}
			mt.id = id
			mt.started = !mt.held
			m.tasks = append(m.tasks, mt)
			y := len(m.tasks) - 1
			if !mt.held {
				check(y, err)
			} else if err != nil {
				t.Fatalf("Create refused: %v", err)
			}
			if err != nil {
				m.tasks = m.tasks[:y] // refused: nothing added
				continue
			}
			n.tasks++
			m.settle()
		case r < 80: // a held join, always with a dependency
			mt := &rmTask{parent: -1, join: true, held: true}
			if rng.IntN(2) == 0 {
				mt.parent = pickLive()
			}
			if mt.dep = pickDep(mt.parent); mt.dep < 0 {
				continue
			}
			id, err := s.Create(&Task{Parent: idOf(mt.parent), Dependency: idOf(mt.dep)})
			if err != nil {
				n.otherErrs++
				continue
			}
			mt.id = id
			m.tasks = append(m.tasks, mt)
			n.tasks++
		default: // Run a held task
			var held []int
			for i, tk := range m.tasks {
				if tk.held && i != 0 && !tk.done {
					held = append(held, i)
				}
			}
			if len(held) == 0 {
				continue
			}
			y := held[rng.IntN(len(held))]
			mt := m.tasks[y]
			err := s.Run(mt.id)
			mt.held = false
			if len(mt.streams) > 0 {
				check(y, err)
			}
			if errors.Is(err, ErrRace) {
				mt.refused = true
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			} else {
				mt.started = true
			}
			m.settle()
		}
		// The model's liveness must be the scheduler's.
		for i, tk := range m.tasks {
			if tk.done != s.IsFinished(tk.id) {
				t.Fatalf("task %d: model done %v, scheduler finished %v", i, tk.done, s.IsFinished(tk.id))
			}
		}
	}
	for i, tk := range m.tasks {
		if tk.held && i != 0 {
			s.Run(tk.id)
		}
	}
	must(t, s.Run(g))
}
