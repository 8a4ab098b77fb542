package kernels_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
)

// userSched is a CPU scheduler with the kernels registered, as README's
// user builds it.
func userSched(t *testing.T) *sched.Scheduler {
	t.Helper()
	reg := sched.NewRegistry()
	if err := kernels.Register(reg); err != nil {
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

// userSizes are the odd element counts of a kernel with default grain g.
func userSizes(g int) []int {
	return []int{0, 1, 2, g - 1, g, g + 1, 3*g + 5, 17*g - 3}
}

// TestUserStreamingOddSizes runs Saxpy, SumF32, MinMaxF32, Avg32F32 and
// ExpandLerp through a scheduler at 0, 1, grain-1, grain+1 and larger
// counts, with the default grain and grains of 1 and 3 (many ranges), and
// checks each output element against this test's float64 reference
// (KERNELS_GO=1 runs the same on the Go code).
func TestUserStreamingOddSizes(t *testing.T) {
	s := userSched(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, grain := range []uint32{0, 1, 3} {
		for _, n := range userSizes(16384) {
			if grain == 1 && n > 5000 {
				continue
			}
			x := make([]float32, n)
			y := make([]float32, n)
			for i := range x {
				x[i], y[i] = rng.Float32()*2-1, rng.Float32()*2-1
			}
			out := make([]float32, n)
			tk := sched.Task{Kernel: kernels.Saxpy}
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
		for _, blocks := range userSizes(64) {
			n := blocks * kernels.SumFactor
			x := make([]float32, n)
			for i := range x {
				x[i] = rng.Float32()*2 - 1
			}
			sums := make([]float32, blocks)
			mm := make([]kernels.MinMax, blocks)
			tk := sched.Task{Kernel: kernels.SumF32}
			tk.Data.Elements, tk.Data.Grain = uint32(blocks), grain
			tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(sums)
			if err := run(s, &tk); err != nil {
				t.Fatalf("sum blocks %d grain %d: %v", blocks, grain, err)
			}
			tk.Kernel = kernels.MinMaxF32
			tk.Data.Out[0] = sched.StreamOf(mm)
			if err := run(s, &tk); err != nil {
				t.Fatalf("minmax blocks %d grain %d: %v", blocks, grain, err)
			}
			for b := 0; b < blocks; b++ {
				var sum, abs float64
				lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
				for _, v := range x[b*kernels.SumFactor : (b+1)*kernels.SumFactor] {
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
		for _, m := range userSizes(2048) {
			seg := make([]kernels.Segment, m)
			for i := range seg {
				seg[i] = kernels.Segment{A: rng.Float32(), B: rng.Float32() * 10}
			}
			out := make([]float32, m*8)
			tk := sched.Task{Kernel: kernels.ExpandLerp}
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

// TestUserReduceNaN: SumF32 of a block holding a NaN is NaN, MinMaxF32
// ignores NaNs (a block of NaNs only is the empty (+Inf, -Inf)), with a
// NaN at every position of a block (the assembly's lanes and tail).
func TestUserReduceNaN(t *testing.T) {
	s := userSched(t)
	const blocks = 3
	nan := float32(math.NaN())
	for pos := 0; pos < kernels.SumFactor; pos += 7 {
		x := make([]float32, blocks*kernels.SumFactor)
		for i := range x {
			x[i] = float32(i%97) - 40
		}
		x[kernels.SumFactor+pos] = nan
		all := x[2*kernels.SumFactor:]
		for i := range all {
			all[i] = nan
		}
		sums := make([]float32, blocks)
		mm := make([]kernels.MinMax, blocks)
		tk := sched.Task{Kernel: kernels.SumF32}
		tk.Data.Elements, tk.Data.Grain = blocks, 1
		tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(sums)
		if err := run(s, &tk); err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(float64(sums[1])) || math.IsNaN(float64(sums[0])) {
			t.Errorf("NaN at %d: sums %v", pos, sums)
		}
		tk.Kernel = kernels.MinMaxF32
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

// TestUserScanOddSizes: AddScan of 256, 256*k and 256^2+256 values with
// grains of 1 and the default equals the sequential exclusive scan; a
// length that is not a multiple of ScanBlock and a short scratch are
// refused.
func TestUserScanOddSizes(t *testing.T) {
	s := userSched(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{256, 512, 256 * 63, 256 * 65, 256*256 + 256, 256 * 257 * 3} {
		v := make([]uint32, n)
		for i := range v {
			v[i] = rng.Uint32()
		}
		out := make([]uint32, n)
		scratch := make([]uint32, kernels.ScanScratchLen(n))
		var tk sched.Task
		id, err := kernels.AddScan(s, tk, v, out, scratch)
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
		_, err := kernels.AddScan(s, sched.Task{}, make([]uint32, tc.n), make([]uint32, tc.out), make([]uint32, tc.scratch))
		if err == nil {
			t.Errorf("scan of %d values into %d with %d scratch: no error", tc.n, tc.out, tc.scratch)
		} else {
			t.Logf("scan %d/%d/%d: %v", tc.n, tc.out, tc.scratch, err)
		}
	}
}

// TestUserShortStreamsNamed: a stream one element short, or with the
// wrong stride, is refused with an error naming the stream.
func TestUserShortStreamsNamed(t *testing.T) {
	s := userSched(t)
	x := make([]float32, 100)
	y := make([]float32, 100)
	tk := sched.Task{Kernel: kernels.Saxpy}
	tk.Data.Elements = 100
	tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = sched.StreamOf(x), sched.StreamOf(y[:99]), sched.StreamOf(x)
	err := run(s, &tk)
	if err == nil || !strings.Contains(err.Error(), "in 1") && !strings.Contains(err.Error(), "y") {
		t.Errorf("saxpy with y short: %v", err)
	}
	t.Logf("short y: %v", err)
	tk.Data.In[1] = sched.StreamOf(y)
	tk.Data.Out[0] = sched.StreamOf(x[:50])
	if err := run(s, &tk); err == nil {
		t.Errorf("saxpy with out short: no error")
	} else {
		t.Logf("short out: %v", err)
	}
	tk.Data.Out[0] = sched.StreamOf(make([]float64, 100))
	if err := run(s, &tk); err == nil {
		t.Errorf("saxpy with a float64 output: no error")
	} else {
		t.Logf("float64 out: %v", err)
	}
	sums := make([]float32, 4)
	tk = sched.Task{Kernel: kernels.SumF32}
	tk.Data.Elements = 4
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(make([]float32, 4*256-1)), sched.StreamOf(sums)
	if err := run(s, &tk); err == nil {
		t.Errorf("sum with its input one short: no error")
	} else {
		t.Logf("short sum input: %v", err)
	}
}

// perSkeleton regroups a stream of bones into one element per skeleton.
func perSkeleton(s sched.Stream, bones int) sched.Stream {
	s.Stride *= uint32(bones)
	s.Count /= uint32(bones)
	return s
}

func userQuat(rng *rand.Rand) [4]float32 {
	var q [4]float64
	var n float64
	for i := range q {
		q[i] = rng.NormFloat64()
		n += q[i] * q[i]
	}
	n = math.Sqrt(n)
	return [4]float32{float32(q[0] / n), float32(q[1] / n), float32(q[2] / n), float32(q[3] / n)}
}

// refMatrix is this test's float64 T*R*S, column-major.
func refMatrix(x kernels.Transform) [16]float64 {
	qx, qy, qz, qw := float64(x.Rot[0]), float64(x.Rot[1]), float64(x.Rot[2]), float64(x.Rot[3])
	r := [3][3]float64{
		{1 - 2*(qy*qy+qz*qz), 2 * (qx*qy - qz*qw), 2 * (qx*qz + qy*qw)},
		{2 * (qx*qy + qz*qw), 1 - 2*(qx*qx+qz*qz), 2 * (qy*qz - qx*qw)},
		{2 * (qx*qz - qy*qw), 2 * (qy*qz + qx*qw), 1 - 2*(qx*qx+qy*qy)},
	}
	var m [16]float64
	for c := 0; c < 3; c++ {
		for row := 0; row < 3; row++ {
			m[c*4+row] = r[row][c] * float64(x.Scale[c])
		}
	}
	m[12], m[13], m[14], m[15] = float64(x.Trans[0]), float64(x.Trans[1]), float64(x.Trans[2]), 1
	return m
}

func mul4(a, b [16]float64) [16]float64 {
	var m [16]float64
	for c := 0; c < 4; c++ {
		for r := 0; r < 4; r++ {
			for k := 0; k < 4; k++ {
				m[c*4+r] += a[k*4+r] * b[c*4+k]
			}
		}
	}
	return m
}

// TestUserLocalToModelOddSizes runs LocalToModel through a scheduler for
// 0, 1, grain-1, grain+1 and many skeletons of 1, 5 and 67 bones (random
// parents, parents first), grains 0 and 1, against this test's float64
// chain within the documented 1e-4 relative tolerance; parents out of
// order are refused naming the stream.
func TestUserLocalToModelOddSizes(t *testing.T) {
	s := userSched(t)
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
			for _, n := range userSizes(8) {
				local := make([]kernels.Transform, n*bones)
				for i := range local {
					sc := float32(0.5 + rng.Float64())
					local[i] = kernels.Transform{Rot: userQuat(rng), Trans: [3]float32{rng.Float32() - 0.5, rng.Float32(), rng.Float32() - 0.5}, Scale: [3]float32{sc, sc, sc}}
				}
				model := make([]kernels.Mat4, n*bones)
				tk := sched.Task{Kernel: kernels.LocalToModel}
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
					ref := make([][16]float64, bones)
					for b := 0; b < bones; b++ {
						ref[b] = refMatrix(local[i*bones+b])
						if p := parents[b]; p >= 0 {
							ref[b] = mul4(ref[p], ref[b])
						}
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
	local := make([]kernels.Transform, 3)
	for i := range local {
		local[i].Rot[3], local[i].Scale = 1, [3]float32{1, 1, 1}
	}
	tk := sched.Task{Kernel: kernels.LocalToModel}
	tk.Data.Elements = 1
	tk.Data.Params[0] = 3
	tk.Data.In[0] = perSkeleton(sched.StreamOf(local), 3)
	tk.Data.In[1] = sched.StreamOf(bad)
	tk.Data.Out[0] = perSkeleton(sched.StreamOf(make([]kernels.Mat4, 3)), 3)
	err := run(s, &tk)
	if err == nil || !strings.Contains(err.Error(), "parent") {
		t.Errorf("parents out of order: %v", err)
	}
	t.Logf("parents out of order: %v", err)
}

// TestUserSkinOddSizes skins 0, 1, grain-1, grain+1 and more vertices of
// several instances (Params[0] = V) with LBS, through a scheduler, against
// this test's float64 blend; a joint index past the palette is refused.
func TestUserSkinOddSizes(t *testing.T) {
	s := userSched(t)
	rng := rand.New(rand.NewPCG(7, 8))
	const bones = 9
	for _, n := range userSizes(2048) {
		for _, inst := range []int{1, 3} {
			if n%inst != 0 {
				continue
			}
			v := n / inst
			verts := make([]kernels.SkinVertex, v)
			for i := range verts {
				w := [4]float32{rng.Float32(), rng.Float32(), rng.Float32(), rng.Float32()}
				sum := w[0] + w[1] + w[2] + w[3]
				for k := range w {
					w[k] /= sum
				}
				verts[i] = kernels.SkinVertex{
					Pos:     [3]float32{rng.Float32(), rng.Float32(), rng.Float32()},
					Normal:  [3]float32{0, 1, 0},
					Joints:  kernels.PackJoints(uint8(rng.IntN(bones)), uint8(rng.IntN(bones)), uint8(rng.IntN(bones)), uint8(rng.IntN(bones))),
					Weights: w,
				}
			}
			pal := make([]kernels.Mat4, bones*inst)
			for i := range pal {
				pal[i] = kernels.RigidMatrix(userQuat(rng), [3]float32{rng.Float32(), rng.Float32(), rng.Float32()})
			}
			out := make([]kernels.SkinnedVertex, n)
			tk := sched.Task{Kernel: kernels.SkinLBS}
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
	verts := []kernels.SkinVertex{{Joints: kernels.PackJoints(0, 0, 9, 0), Weights: [4]float32{1}}}
	tk := sched.Task{Kernel: kernels.SkinLBS}
	tk.Data.Elements = 1
	tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = sched.StreamOf(verts), sched.StreamOf(make([]kernels.Mat4, 9)), sched.StreamOf(make([]kernels.SkinnedVertex, 1))
	err := run(s, &tk)
	if err == nil {
		t.Errorf("joint 9 of a 9-matrix palette: no error")
	}
	t.Logf("joint past the palette: %v", err)
}
