package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// rangeCounter counts kernel invocations (ranges) per kernel.
type rangeCounter struct {
	n [64]atomic.Int32
}

func (r *rangeCounter) TaskRan(ev *sched.RunEvent) {
	if int(ev.Kernel) < len(r.n) && ev.Err == nil {
		r.n[ev.Kernel].Add(1)
	}
}

func newSched(t testing.TB, workers int, obs sched.Observer) (*sched.Scheduler, *sched.Ctx) {
	t.Helper()
	reg := sched.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: workers, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.RegisterThread("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// items is the fixture size each kernel runs with in the scheduler tests.
func items(id sched.KernelID) int {
	switch id {
	case SkinLBS, SkinLBSUniform, SkinDQS, SkinDQSUniform, Saxpy:
		return 20000
	case LocalToModel, LocalToModelSkin:
		return 37
	case CRC32CBlocks:
		return 41
	}
	return 300
}

// TestKernelsThroughScheduler runs every kernel through a real scheduler,
// split into many ranges over 1, 2 and 4 workers, and compares the result
// bit for bit with one single-range call.
func TestKernelsThroughScheduler(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		var rc rangeCounter
		_, m := newSched(t, workers, &rc)
		for _, id := range IDs() {
			n := items(id)
			d := fixture(t, id, n)
			if err := runDirect(t, id, &d, 0, d.Elements); err != nil {
				t.Fatal(err)
			}
			want := outputs(&d)
			clearOutputs(&d)
			d.Grain = uint32(max(1, n/17))
			before := rc.n[id].Load()
			tid, err := m.Add(&sched.Task{Kernel: id, Data: d})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Wait(tid); err != nil {
				t.Fatal(err)
			}
			if ranges := rc.n[id].Load() - before; ranges < 2 {
				t.Fatalf("kernel %d with %d workers ran as %d range(s); want a split", id, workers, ranges)
			}
			got := outputs(&d)
			for i := range want {
				if string(got[i]) != string(want[i]) {
					t.Fatalf("kernel %d, %d workers: output %d differs from the single-range result", id, workers, i)
				}
			}
		}
	}
}

// TestKernelErrorFailsTask: a kernel's error reaches Wait as a task error.
func TestKernelErrorFailsTask(t *testing.T) {
	_, m := newSched(t, 2, nil)
	d := fixture(t, LocalToModel, 40)
	d.Params[0] = 0
	d.Grain = 4
	id, err := m.Add(&sched.Task{Kernel: LocalToModel, Data: d})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "failing kernel", m.Wait(id), "Params[0] (bones per skeleton) is 0")
}

func TestAddScan(t *testing.T) {
	_, m := newSched(t, 2, nil)
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{256, 512, 256 * 300, 256*256*2 + 256*5} {
		values := make([]uint32, n)
		for i := range values {
			values[i] = r.Uint32() >> uint(r.IntN(32)) // wraps around, with small values too
		}
		out := make([]uint32, n)
		scratch := make([]uint32, ScanScratchLen(n))
		for i := range scratch {
			scratch[i] = 0xdeadbeef // scratch need not be zeroed
		}
		id, err := AddScan(m, sched.Task{}, values, out, scratch)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Wait(id); err != nil {
			t.Fatal(err)
		}
		want := refExclusiveScan(values, 0)
		for i := range want {
			if out[i] != want[i] {
				t.Fatalf("n=%d: scan[%d] = %d, want %d", n, i, out[i], want[i])
			}
		}
	}
}

func TestAddScanRefuses(t *testing.T) {
	s, _ := newSched(t, 1, nil)
	v := make([]uint32, 512)
	for _, c := range []struct {
		values, out, scratch []uint32
		error                string
	}{
		{nil, nil, nil, "want a positive multiple of 256"},
		{v[:300], v[:300], v, "want a positive multiple of 256"},
		{v, v[:256], v, "512 values but 256 outputs"},
		{v, v, nil, "scratch holds 0 values, 512 values need 513"},
	} {
		_, err := AddScan(s, sched.Task{}, c.values, c.out, c.scratch)
		wantErr(t, "AddScan", err, c.error)
	}
	// A task the scheduler refuses (an affinity with no executor).
	scratch := make([]uint32, ScanScratchLen(512))
	_, err := AddScan(s, sched.Task{Affinity: sched.GPU}, v, make([]uint32, 512), scratch)
	wantErr(t, "AddScan on a GPU without executor", err, "no executor")
	if !strings.HasPrefix(err.Error(), "kernels: AddScan: ") {
		t.Fatalf("error %q does not name AddScan", err)
	}
}

func TestScanScratchLen(t *testing.T) {
	for _, c := range []struct{ n, want int }{{256, 1}, {512, 1 + 512}, {256 * 256, 1 + 512}, {256*256 + 256, 1 + 1024 + 512}} {
		if got := ScanScratchLen(c.n); got != c.want {
			t.Errorf("ScanScratchLen(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// cpuSched is a CPU scheduler with the kernels registered, as the README
// builds it.
func cpuSched(t *testing.T) *sched.Scheduler {
	t.Helper()
	reg := sched.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func run(s *sched.Scheduler, t *sched.Task) error {
	id, err := s.Add(t)
	if err != nil {
		return err
	}
	return s.Wait(id)
}

// oddSizes are the odd element counts of a kernel with default grain g.
func oddSizes(g int) []int {
	return []int{0, 1, 2, g - 1, g, g + 1, 3*g + 5, 17*g - 3}
}

// TestStreamingOddSizes runs Saxpy, SumF32, MinMaxF32, Avg32F32 and
// ExpandLerp through a scheduler at 0, 1, grain-1, grain+1 and larger
// counts, with the default grain and grains of 1 and 3 (many ranges), and
// checks each output element against this test's float64 reference
// (KERNELS_GO=1 runs the same on the Go code).
func TestStreamingOddSizes(t *testing.T) {
	s := cpuSched(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, grain := range []uint32{0, 1, 3} {
		for _, n := range oddSizes(16384) {
			if grain == 1 && n > 5000 {
				continue
			}
			x := make([]float32, n)
			y := make([]float32, n)
			for i := range x {
				x[i], y[i] = rng.Float32()*2-1, rng.Float32()*2-1
			}
			out := make([]float32, n)
			tk := sched.Task{Kernel: Saxpy}
			tk.Data.Elements, tk.Data.Grain = uint32(n), grain
			tk.Data.Params[0] = math.Float32bits(-1.5)
			tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y), sched.StreamOf(out)
			if err := run(s, &tk); err != nil {
				t.Fatalf("saxpy n %d grain %d: %v", n, grain, err)
			}
			for i := range out {
				if want := float32(-1.5)*x[i] + y[i]; math.Abs(float64(out[i]-want)) > 1e-6 {
					t.Fatalf("saxpy n %d grain %d: out[%d] = %v, want %v", n, grain, i, out[i], want)
				}
			}
		}
		for _, blocks := range oddSizes(64) {
			n := blocks * SumFactor
			x := make([]float32, n)
			for i := range x {
				x[i] = rng.Float32()*2 - 1
			}
			sums := make([]float32, blocks)
			mm := make([]MinMax, blocks)
			tk := sched.Task{Kernel: SumF32}
			tk.Data.Elements, tk.Data.Grain = uint32(blocks), grain
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(sums)
			if err := run(s, &tk); err != nil {
				t.Fatalf("sum blocks %d grain %d: %v", blocks, grain, err)
			}
			tk.Kernel = MinMaxF32
			tk.Data.Out[0] = sched.StreamOf(mm)
			if err := run(s, &tk); err != nil {
				t.Fatalf("minmax blocks %d grain %d: %v", blocks, grain, err)
			}
			for b := 0; b < blocks; b++ {
				var sum, abs float64
				lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
				for _, v := range x[b*SumFactor : (b+1)*SumFactor] {
					sum += float64(v)
					abs += math.Abs(float64(v))
					lo, hi = min(lo, v), max(hi, v)
				}
				if math.Abs(float64(sums[b])-sum) > 300*0x1p-24*abs {
					t.Fatalf("sum blocks %d grain %d: block %d = %v, want %v", blocks, grain, b, sums[b], sum)
				}
				if mm[b].Min != lo || mm[b].Max != hi {
					t.Fatalf("minmax blocks %d grain %d: block %d = %v, want %v %v", blocks, grain, b, mm[b], lo, hi)
				}
			}
		}
		for _, m := range oddSizes(2048) {
			seg := make([]Segment, m)
			for i := range seg {
				seg[i] = Segment{A: rng.Float32(), B: rng.Float32() * 10}
			}
			out := make([]float32, m*8)
			tk := sched.Task{Kernel: ExpandLerp}
			tk.Data.Elements, tk.Data.Grain = uint32(m), grain
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(seg), sched.StreamOf(out)
			if err := run(s, &tk); err != nil {
				t.Fatalf("lerp %d grain %d: %v", m, grain, err)
			}
			for i, sg := range seg {
				for k := 0; k < 8; k++ {
					want := float64(sg.A) + (float64(sg.B)-float64(sg.A))*float64(k)/8
					if math.Abs(float64(out[i*8+k])-want) > 1e-5*max(1, math.Abs(want)) {
						t.Fatalf("lerp %d grain %d: out[%d][%d] = %v, want %v", m, grain, i, k, out[i*8+k], want)
					}
				}
			}
		}
	}
}

// TestReduceNaN: SumF32 of a block holding a NaN is NaN, MinMaxF32
// ignores NaNs (a block of NaNs only is the empty (+Inf, -Inf)), with a
// NaN at every position of a block (the assembly's lanes and tail).
func TestReduceNaN(t *testing.T) {
	s := cpuSched(t)
	const blocks = 3
	nan := float32(math.NaN())
	for pos := 0; pos < SumFactor; pos += 7 {
		x := make([]float32, blocks*SumFactor)
		for i := range x {
			x[i] = float32(i%97) - 40
		}
		x[SumFactor+pos] = nan
		all := x[2*SumFactor:]
		for i := range all {
			all[i] = nan
		}
		sums := make([]float32, blocks)
		mm := make([]MinMax, blocks)
		tk := sched.Task{Kernel: SumF32}
		tk.Data.Elements, tk.Data.Grain = blocks, 1
		tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(sums)
		if err := run(s, &tk); err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(float64(sums[1])) || math.IsNaN(float64(sums[0])) {
			t.Errorf("NaN at %d: sums %v", pos, sums)
		}
		tk.Kernel = MinMaxF32
		tk.Data.Out[0] = sched.StreamOf(mm)
		if err := run(s, &tk); err != nil {
			t.Fatal(err)
		}
		if mm[1].Min != -40 || mm[1].Max != 56 {
			t.Errorf("NaN at %d: minmax of the block = %v, want {-40 56}", pos, mm[1])
		}
		if !math.IsInf(float64(mm[2].Min), 1) || !math.IsInf(float64(mm[2].Max), -1) {
			t.Errorf("all NaN: minmax %v, want {+Inf -Inf}", mm[2])
		}
	}
}

// TestScanOddSizes: AddScan of 256, 256*k and 256^2+256 values with
// grains of 1 and the default equals the sequential exclusive scan; a
// length that is not a multiple of ScanBlock and a short scratch are
// refused.
func TestScanOddSizes(t *testing.T) {
	s := cpuSched(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{256, 512, 256 * 63, 256 * 65, 256*256 + 256, 256 * 257 * 3} {
		v := make([]uint32, n)
		for i := range v {
			v[i] = rng.Uint32()
		}
		out := make([]uint32, n)
		scratch := make([]uint32, ScanScratchLen(n))
		var tk sched.Task
		id, err := AddScan(s, tk, v, out, scratch)
		if err != nil {
			t.Fatalf("scan %d: %v", n, err)
		}
		if err := s.Wait(id); err != nil {
			t.Fatalf("scan %d: %v", n, err)
		}
		var acc uint32
		for i := range v {
			if out[i] != acc {
				t.Fatalf("scan %d: out[%d] = %d, want %d", n, i, out[i], acc)
			}
			acc += v[i]
		}
	}
	for _, tc := range []struct {
		n, out, scratch int
	}{{0, 0, 0}, {255, 255, 64}, {300, 300, 64}, {512, 511, 64}, {512, 512, 0}} {
		_, err := AddScan(s, sched.Task{}, make([]uint32, tc.n), make([]uint32, tc.out), make([]uint32, tc.scratch))
		if err == nil {
			t.Errorf("scan of %d values into %d with %d scratch: no error", tc.n, tc.out, tc.scratch)
		} else {
			t.Logf("scan %d/%d/%d: %v", tc.n, tc.out, tc.scratch, err)
		}
	}
}

// perSkeleton regroups a stream of bones into one element per skeleton.
func perSkeleton(s sched.Stream, bones int) sched.Stream {
	s.Stride *= uint32(bones)
	s.Count /= uint32(bones)
	return s
}

// TestLocalToModelOddSizes runs LocalToModel through a scheduler for
// 0, 1, grain-1, grain+1 and many skeletons of 1, 5 and 67 bones (random
// parents, parents first), grains 0 and 1, against refModel's float64
// chain within the documented 1e-4 relative tolerance; parents out of
// order are refused naming the stream.
func TestLocalToModelOddSizes(t *testing.T) {
	s := cpuSched(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, bones := range []int{1, 5, 67} {
		parents := make([]int32, bones)
		for b := range parents {
			parents[b] = -1
			if b > 0 && rng.IntN(8) != 0 {
				parents[b] = int32(rng.IntN(b))
			}
		}
		for _, grain := range []uint32{0, 1} {
			for _, n := range oddSizes(8) {
				local := make([]Transform, n*bones)
				for i := range local {
					sc := float32(0.5 + rng.Float64())
					local[i] = Transform{Rot: randUnitQuat(rng), Trans: [3]float32{rng.Float32() - 0.5, rng.Float32(), rng.Float32() - 0.5}, Scale: [3]float32{sc, sc, sc}}
				}
				model := make([]Mat4, n*bones)
				tk := sched.Task{Kernel: LocalToModel}
				tk.Data.Elements, tk.Data.Grain = uint32(n), grain
				tk.Data.Params[0] = uint32(bones)
				tk.Data.In[0] = perSkeleton(sched.StreamOf(local), bones)
				tk.Data.In[1] = sched.StreamOf(parents)
				tk.Data.Out[0] = perSkeleton(sched.StreamOf(model), bones)
				if n == 0 {
					tk.Data.In[0].Stride = uint32(48 * bones)
					tk.Data.Out[0].Stride = uint32(64 * bones)
				}
				if err := run(s, &tk); err != nil {
					t.Fatalf("%d bones, %d skeletons, grain %d: %v", bones, n, grain, err)
				}
				for i := 0; i < n; i++ {
					ref := refModel(local[i*bones:(i+1)*bones], parents)
					for b := 0; b < bones; b++ {
						for k := 0; k < 16; k++ {
							got := float64(model[i*bones+b][k])
							if math.Abs(got-ref[b][k]) > 1e-4*max(1, math.Abs(ref[b][k])) {
								t.Fatalf("%d bones, %d skeletons, grain %d: skeleton %d bone %d [%d] = %v, want %v", bones, n, grain, i, b, k, got, ref[b][k])
							}
						}
					}
				}
			}
		}
	}
	// parents out of order
	bad := []int32{-1, 2, 0}
	local := make([]Transform, 3)
	for i := range local {
		local[i].Rot[3], local[i].Scale = 1, [3]float32{1, 1, 1}
	}
	tk := sched.Task{Kernel: LocalToModel}
	tk.Data.Elements = 1
	tk.Data.Params[0] = 3
	tk.Data.In[0] = perSkeleton(sched.StreamOf(local), 3)
	tk.Data.In[1] = sched.StreamOf(bad)
	tk.Data.Out[0] = perSkeleton(sched.StreamOf(make([]Mat4, 3)), 3)
	err := run(s, &tk)
	if err == nil || !strings.Contains(err.Error(), "parent") {
		t.Errorf("parents out of order: %v", err)
	}
	t.Logf("parents out of order: %v", err)
}

// TestSkinOddSizes skins 0, 1, grain-1, grain+1 and more vertices of
// several instances (Params[0] = V) with LBS, through a scheduler, against
// this test's float64 blend; a joint index past the palette is refused.
func TestSkinOddSizes(t *testing.T) {
	s := cpuSched(t)
	rng := rand.New(rand.NewPCG(7, 8))
	const bones = 9
	for _, n := range oddSizes(2048) {
		for _, inst := range []int{1, 3} {
			if n%inst != 0 {
				continue
			}
			v := n / inst
			verts := make([]SkinVertex, v)
			for i := range verts {
				w := [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), rng.Float32()}
				sum := w[0] + w[1] + w[2] + w[3]
				for k := range w {
					w[k] /= sum
				}
				verts[i] = SkinVertex{
					Pos:     [3]float32{rng.Float32(), rng.Float32(), rng.Float32()},
					Normal:  [3]float32{0, 1, 0},
					Joints:  PackJoints(uint8(rng.IntN(bones)), uint8(rng.IntN(bones)), uint8(rng.IntN(bones)), uint8(rng.IntN(bones))),
					Weights: w,
				}
			}
			pal := make([]Mat4, bones*inst)
			for i := range pal {
				pal[i] = RigidMatrix(randUnitQuat(rng), [3]float32{rng.Float32(), rng.Float32(), rng.Float32()})
			}
			out := make([]SkinnedVertex, n)
			tk := sched.Task{Kernel: SkinLBS}
			tk.Data.Elements = uint32(n)
			tk.Data.Params[0], tk.Data.Params[1] = uint32(v), bones
			tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = sched.StreamOf(verts), sched.StreamOf(pal), sched.StreamOf(out)
			if v == 0 {
				tk.Data.Params[0] = 0
			}
			if err := run(s, &tk); err != nil {
				t.Fatalf("lbs %d vertices x %d: %v", v, inst, err)
			}
			for i := 0; i < n; i++ {
				vx := verts[i%v]
				base := (i / v) * bones
				var p [3]float64
				for k := 0; k < 4; k++ {
					j := int(vx.Joints>>(8*k)) & 0xff
					m := pal[base+j]
					for r := 0; r < 3; r++ {
						p[r] += float64(vx.Weights[k]) * (float64(m[r])*float64(vx.Pos[0]) + float64(m[4+r])*float64(vx.Pos[1]) + float64(m[8+r])*float64(vx.Pos[2]) + float64(m[12+r]))
					}
				}
				for r := 0; r < 3; r++ {
					if math.Abs(float64(out[i].Pos[r])-p[r]) > 2e-5*max(1, math.Abs(p[r])) {
						t.Fatalf("lbs %d vertices x %d: vertex %d pos %v, want %v", v, inst, i, out[i].Pos, p)
					}
				}
			}
		}
	}
	verts := []SkinVertex{{Joints: PackJoints(0, 0, 9, 0), Weights: [4]float32{1}}}
	tk := sched.Task{Kernel: SkinLBS}
	tk.Data.Elements = 1
	tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = sched.StreamOf(verts), sched.StreamOf(make([]Mat4, 9)), sched.StreamOf(make([]SkinnedVertex, 1))
	err := run(s, &tk)
	if err == nil {
		t.Errorf("joint 9 of a 9-matrix palette: no error")
	}
	t.Logf("joint past the palette: %v", err)
}

// TestRegisterBesideHandedIDs: this package's fixed IDs and a library
// that takes its IDs from the registry (RegisterNext, RegisterBlock) share
// one registry in either order: both register, and each finds its own
// kernels under its IDs.
func TestRegisterBesideHandedIDs(t *testing.T) {
	f := func(*sched.Ctx, *sched.TaskData) error { return nil }
	other := func(reg *sched.Registry) (sched.KernelID, sched.KernelID) {
		one, err := reg.RegisterNext(sched.Kernel{Name: "other.one", CPU: f})
		if err != nil {
			t.Fatal(err)
		}
		block, err := reg.RegisterBlock("other", []sched.Kernel{{Name: "other.a", CPU: f}, {Name: "other.b", CPU: f}})
		if err != nil {
			t.Fatal(err)
		}
		return one, block
	}
	for _, kernelsFirst := range []bool{true, false} {
		reg := sched.NewRegistry()
		var one, block sched.KernelID
		if kernelsFirst {
			if err := Register(reg); err != nil {
				t.Fatal(err)
			}
			one, block = other(reg)
		} else {
			one, block = other(reg)
			if err := Register(reg); err != nil {
				t.Fatalf("Register after another library took its IDs: %v", err)
			}
		}
		for _, id := range IDs() {
			if k := reg.Lookup(id); k == nil || k.Name != defs[id].kernel.Name {
				t.Fatalf("kernels first %v: Lookup(%d) = %v, want %q", kernelsFirst, id, k, defs[id].kernel.Name)
			}
		}
		for id, name := range map[sched.KernelID]string{one: "other.one", block: "other.a", block + 1: "other.b"} {
			if k := reg.Lookup(id); k == nil || k.Name != name {
				t.Fatalf("kernels first %v: Lookup(%d) = %v, want %q", kernelsFirst, id, k, name)
			}
		}
	}
}
