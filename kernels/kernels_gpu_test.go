package kernels

// GPU-versus-CPU tests: every kernel on a real Vulkan device (lavapipe
// here) through a real scheduler with Affinity sched.GPU and the real
// executor, with the validation layer on (main_gpu_test.go). Tolerances are
// those of doc.go ("Tolerances"), restated next to each check.

import (
	"math"
	"testing"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/sched"
)

// gpuSizes are the work-item counts each kernel runs with against the
// CPU: one item (a dispatch of one invocation), and a size that needs
// several workgroups and ends in a partial one (and for the float
// reductions, scan and CRC, a partial last block through Params[0]).
func gpuSizes(id sched.KernelID) []int {
	switch id {
	case SkinLBS, SkinLBSUniform, SkinDQS, SkinDQSUniform:
		return []int{1, 20001}
	case LocalToModel, LocalToModelSkin:
		return []int{1, 37}
	case CRC32CBlocks:
		return []int{1, 41}
	case Saxpy:
		return []int{1, 100_003}
	}
	return []int{1, 300}
}

// padUniformPalette makes the palette of a uniform-palette kernel the
// whole 64 KiB block the shader declares (UniformPaletteBytes), as doc.go
// requires of a GPU task; the CPU kernel accepts it too.
func padUniformPalette(d *sched.TaskData, id sched.KernelID) {
	switch id {
	case SkinLBSUniform:
		p := make([]Mat4, UniformLBSBones)
		copy(p, sched.View[Mat4](d.In[1]))
		d.In[1] = sched.StreamOf(p)
	case SkinDQSUniform:
		p := make([]DualQuat, UniformDQSBones)
		copy(p, sched.View[DualQuat](d.In[1]))
		d.In[1] = sched.StreamOf(p)
	}
}

// partialBlock is the index of Avg32F32's one partial block in a fixture
// of n items (fixture sets Params[0] = 32n-5), the only output allowed
// 3 ULP instead of bit-exactness.
func partialBlock(id sched.KernelID, n int) int {
	if id == Avg32F32 {
		return n - 1
	}
	return -1
}

// TestGPUMatchesCPU runs every kernel on the GPU, with host streams, on
// both memory paths (direct mapping, and the staging copies of discrete
// GPUs), and compares each output with the CPU kernel's on the same input,
// by the kernel's tolerance:
//
//	ScanReduceU32, ScanDownsweepU32, CRC32CBlocks     bit-exact
//	SumF32, ExpandLerp, Saxpy                         bit-exact (normal inputs)
//	Avg32F32                                          bit-exact, 3 ULP for the partial block
//	MinMaxF32                                         exact (-0 == +0)
//	SkinLBS*, SkinDQS*                                |gpu-cpu| <= 2e-5*max(1,|cpu|)
//	LocalToModel*                                     |gpu-cpu| <= 1e-4*max(1,|cpu|)
func TestGPUMatchesCPU(t *testing.T) {
	forDevices(t, func(t *testing.T, staging bool) {
		e := newGPUEnv(t, staging, gpu.ExecutorOptions{}, sched.Config{})
		tasks := 0
		for _, id := range IDs() {
			for _, n := range gpuSizes(id) {
				d := fixture(t, id, n)
				padUniformPalette(&d, id)
				// The Go loops, the shaders' order of operations; the
				// AVX2 sums are compared with the GPU below.
				if err := runReference(t, id, &d); err != nil {
					t.Fatalf("kernel %d, CPU: %v", id, err)
				}
				want := outputs(&d)
				for i := range d.Out {
					for k := range d.Out[i].Bytes {
						d.Out[i].Bytes[k] = 0xa5 // not a plausible result
					}
				}
				e.run(t, sched.Task{Kernel: id, Affinity: sched.GPU, Data: d})
				tasks++
				got := outputs(&d)
				for o := range want {
					compareOutput(t, id, o, got[o], want[o], partialBlock(id, n))
				}
				compareFastSums(t, id, &d, got[0])
			}
		}
		e.obs.wait(t, tasks)
		st := e.exec.Stats()
		if st.Tasks != uint64(tasks) || st.Failed != 0 {
			t.Fatalf("executor stats: %d tasks, %d failed; want %d and 0", st.Tasks, st.Failed, tasks)
		}
		for _, id := range IDs() {
			if ks := e.exec.KernelStats(id); ks.Tasks != uint64(len(gpuSizes(id))) || ks.Dispatch <= 0 {
				t.Errorf("kernel %d: executor counted %d tasks, dispatch time %v", id, ks.Tasks, ks.Dispatch)
			}
		}
	})
}

// halfPlacer sends the first half of every Auto task to the GPU and the
// rest to the CPU workers (co-execution).
type halfPlacer struct{}

func (halfPlacer) Place(_ sched.KernelID, _ *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	return sched.GPU, (d.End - d.Begin) / 2
}

// TestGPUCoExecution splits each kernel's task between the GPU (first
// half) and the CPU workers (second half): the two devices write disjoint
// parts of the same host outputs, and the whole must match the CPU-only
// result by the kernel's tolerance (the CPU half is bit-exact).
//
// The CPU half runs the Go loops (streamFast cleared), whose order of
// operations is the shaders': the AVX2 sums differ from the GPU by
// sumTolerance, which TestGPUMatchesCPU checks.
func TestGPUCoExecution(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	streamFast = false
	e := newGPUEnv(t, false, gpu.ExecutorOptions{}, sched.Config{Placer: halfPlacer{}})
	gpuTasks := 0
	for _, id := range IDs() {
		n := gpuSizes(id)[1]
		d := fixture(t, id, n)
		padUniformPalette(&d, id)
		if err := runDirect(t, id, &d, 0, d.Elements); err != nil {
			t.Fatal(err)
		}
		want := outputs(&d)
		clearOutputs(&d)
		e.run(t, sched.Task{Kernel: id, Affinity: sched.Auto, Data: d})
		gpuTasks++
		got := outputs(&d)
		for o := range want {
			compareOutput(t, id, o, got[o], want[o], partialBlock(id, n))
		}
		if ks := e.exec.KernelStats(id); ks.Items != uint64(n/2) {
			t.Fatalf("kernel %d: the GPU ran %d items, want the first half (%d)", id, ks.Items, n/2)
		}
	}
	e.obs.wait(t, gpuTasks)
}

// gpuKAT is a known-answer case: task data and a check of the outputs,
// applied to both the GPU and the CPU result.
type gpuKAT struct {
	name  string
	id    sched.KernelID
	data  func() sched.TaskData
	check func(t *testing.T, d *sched.TaskData)
}

// TestGPUKnownAnswers runs small cases worked out by hand (the ones of
// kat_test.go) on the GPU and on the CPU kernel; both must give the
// answer, within 1e-6 for the float geometry (exact values otherwise).
func TestGPUKnownAnswers(t *testing.T) {
	e := newGPUEnv(t, false, gpu.ExecutorOptions{}, sched.Config{})
	for _, c := range gpuKATs() {
		t.Run(c.name, func(t *testing.T) {
			d := c.data()
			d.End = d.Elements
			e.run(t, sched.Task{Kernel: c.id, Affinity: sched.GPU, Data: d})
			c.check(t, &d)
			d = c.data() // fresh: outputs may alias inputs (saxpy in place)
			if err := runDirect(t, c.id, &d, 0, d.Elements); err != nil {
				t.Fatal(err)
			}
			c.check(t, &d)
		})
	}
}

func gpuKATs() []gpuKAT {
	ident := [4]float32{0, 0, 0, 1}
	lbsCase := func(id sched.KernelID, bones int) gpuKAT {
		// Bone 0 translates by (1, 0, 0); bone 1 rotates 90 degrees about
		// Z. Vertex (1, 0, 0), normal (1, 0, 0), half on each bone:
		// position (1, 0.5, 0), normal (1, 1, 0)/sqrt2.
		return gpuKAT{name: "lbs", id: id, data: func() sched.TaskData {
			pal := make([]Mat4, bones)
			pal[0] = RigidMatrix(ident, [3]float32{1, 0, 0})
			pal[1] = RigidMatrix(AxisAngle([3]float32{0, 0, 1}, math.Pi/2), [3]float32{})
			verts := []SkinVertex{{Pos: [3]float32{1, 0, 0}, Normal: [3]float32{1, 0, 0}, Joints: PackJoints(0, 1, 0, 0), Weights: [4]float32{0.5, 0.5, 0, 0}}}
			return skinTask(verts, sched.StreamOf(pal), make([]SkinnedVertex, 1), 0, 0)
		}, check: func(t *testing.T, d *sched.TaskData) {
			o := sched.View[SkinnedVertex](d.Out[0])[0]
			checkVec(t, "position", o.Pos, [3]float64{1, 0.5, 0}, 1e-6)
			checkVec(t, "normal", o.Normal, [3]float64{math.Sqrt2 / 2, math.Sqrt2 / 2, 0}, 1e-6)
		}}
	}
	dqsCase := func(id sched.KernelID, bones int) gpuKAT {
		// Rotate 90 degrees about Z, then translate (1, 2, 3); bone 1 is
		// the same transform with the opposite sign (antipodal): (1, 0, 0)
		// goes to (1, 3, 3) and the normal (1, 0, 0) to (0, 1, 0) either way.
		return gpuKAT{name: "dqs", id: id, data: func() sched.TaskData {
			dq := DualQuatFromRT(AxisAngle([3]float32{0, 0, 1}, math.Pi/2), [3]float32{1, 2, 3})
			pal := make([]DualQuat, bones)
			pal[0] = dq
			for k := range 4 {
				pal[1].Real[k], pal[1].Dual[k] = -dq.Real[k], -dq.Dual[k]
			}
			verts := []SkinVertex{
				{Pos: [3]float32{1, 0, 0}, Normal: [3]float32{1, 0, 0}, Joints: PackJoints(0, 0, 0, 0), Weights: [4]float32{1, 0, 0, 0}},
				{Pos: [3]float32{1, 0, 0}, Normal: [3]float32{1, 0, 0}, Joints: PackJoints(0, 1, 0, 0), Weights: [4]float32{0.5, 0.5, 0, 0}},
			}
			return skinTask(verts, sched.StreamOf(pal), make([]SkinnedVertex, 2), 0, 0)
		}, check: func(t *testing.T, d *sched.TaskData) {
			for _, o := range sched.View[SkinnedVertex](d.Out[0]) {
				checkVec(t, "position", o.Pos, [3]float64{1, 3, 3}, 1e-6)
				checkVec(t, "normal", o.Normal, [3]float64{0, 1, 0}, 1e-6)
			}
		}}
	}
	poseCase := func(id sched.KernelID) gpuKAT {
		// handChain's skeletons. With skin, the inverse bind matrices are
		// the identity, so skin == model.
		return gpuKAT{name: "pose", id: id, data: func() sched.TaskData {
			local := handChain()
			var inv []Mat4
			if id == LocalToModelSkin {
				inv = []Mat4{Identity(), Identity(), Identity()}
			}
			d, _, _ := poseTask(local, []int32{-1, 0, 1}, 3, inv)
			return d
		}, check: func(t *testing.T, d *sched.TaskData) {
			for o := range 2 {
				if id == LocalToModel && o == 1 {
					break
				}
				checkHandChain(t, sched.View[Mat4](d.Out[o]))
			}
		}}
	}
	ones := make([]uint32, 2*ScanBlock)
	for i := range ones {
		ones[i] = 1
	}
	return []gpuKAT{
		lbsCase(SkinLBS, 2), lbsCase(SkinLBSUniform, UniformLBSBones),
		dqsCase(SkinDQS, 2), dqsCase(SkinDQSUniform, UniformDQSBones),
		poseCase(LocalToModel), poseCase(LocalToModelSkin),
		{name: "sum", id: SumF32, data: func() sched.TaskData {
			// 1..256 sums to 32896 (exact); 10 valid halves to 5.
			x := make([]float32, 2*SumFactor)
			for i := range SumFactor {
				x[i], x[SumFactor+i] = float32(i+1), 0.5
			}
			return reduceTask(x, make([]float32, 2), SumFactor+10)
		}, check: func(t *testing.T, d *sched.TaskData) {
			if out := sched.View[float32](d.Out[0]); out[0] != 32896 || out[1] != 5 {
				t.Fatalf("sums %v, want [32896 5]", out)
			}
		}},
		{name: "minmax", id: MinMaxF32, data: func() sched.TaskData {
			x := make([]float32, 3*SumFactor)
			for i := range x {
				x[i] = float32(i % 7)
			}
			x[3], x[300] = -2, 99
			x[200], x[256] = float32(math.NaN()), float32(math.NaN()) // ignored
			return reduceTask(x, make([]MinMax, 3), 2*SumFactor)      // block 2 is empty
		}, check: func(t *testing.T, d *sched.TaskData) {
			inf := float32(math.Inf(1))
			want := []MinMax{{-2, 6}, {0, 99}, {inf, -inf}}
			if out := sched.View[MinMax](d.Out[0]); out[0] != want[0] || out[1] != want[1] || out[2] != want[2] {
				t.Fatalf("minmax %v, want %v", out, want)
			}
		}},
		{name: "avg32", id: Avg32F32, data: func() sched.TaskData {
			// 0..31: 15.5; three valid values 1, 2, 4: 7/3 (3 ULP); empty: 0.
			x := make([]float32, 3*Avg32Factor)
			for i := range Avg32Factor {
				x[i] = float32(i)
			}
			x[32], x[33], x[34] = 1, 2, 4
			return reduceTask(x, make([]float32, 3), 35)
		}, check: func(t *testing.T, d *sched.TaskData) {
			out := sched.View[float32](d.Out[0])
			if out[0] != 15.5 || ulps(out[1], float32(7)/3) > ulpAvg || out[2] != 0 {
				t.Fatalf("averages %v, want [15.5 %v (3 ULP) 0]", out, float32(7)/3)
			}
		}},
		{name: "expand", id: ExpandLerp, data: func() sched.TaskData {
			var d sched.TaskData
			d.Elements = 2
			d.In[0] = sched.StreamOf([]Segment{{0, 8}, {2, -2}})
			d.Out[0] = sched.StreamOf(make([]float32, 2*ExpandFactor))
			return d
		}, check: func(t *testing.T, d *sched.TaskData) {
			want := []float32{0, 1, 2, 3, 4, 5, 6, 7, 2, 1.5, 1, 0.5, 0, -0.5, -1, -1.5}
			out := sched.View[float32](d.Out[0])
			for i := range want {
				if out[i] != want[i] {
					t.Fatalf("samples %v, want %v", out, want)
				}
			}
		}},
		{name: "scan_reduce", id: ScanReduceU32, data: func() sched.TaskData {
			var d sched.TaskData
			d.Elements, d.Params[0] = 2, 300 // 256 + 44 valid ones
			d.In[0], d.Out[0] = sched.StreamOf(ones), sched.StreamOf(make([]uint32, 2))
			return d
		}, check: func(t *testing.T, d *sched.TaskData) {
			if out := sched.View[uint32](d.Out[0]); out[0] != 256 || out[1] != 44 {
				t.Fatalf("totals %v, want [256 44]", out)
			}
		}},
		{name: "scan_downsweep", id: ScanDownsweepU32, data: func() sched.TaskData {
			var d sched.TaskData
			d.Elements, d.Params[0] = 2, 300
			d.In[0], d.In[1] = sched.StreamOf([]uint32{10, 20}), sched.StreamOf(ones)
			d.Out[0] = sched.StreamOf(make([]uint32, 2*ScanBlock))
			return d
		}, check: func(t *testing.T, d *sched.TaskData) {
			out := sched.View[uint32](d.Out[0])
			for i := range out {
				want := uint32(10 + i)
				if i >= ScanBlock {
					want = uint32(20 + min(i-ScanBlock, 44))
				}
				if out[i] != want {
					t.Fatalf("scan[%d] = %d, want %d", i, out[i], want)
				}
			}
		}},
		{name: "crc32c", id: CRC32CBlocks, data: func() sched.TaskData {
			// The check value of CRC-32C: "123456789" -> 0xe3069283.
			words := make([]uint32, 2*CRCBlockWords)
			copy(sched.StreamOf(words).Bytes, "123456789")
			var d sched.TaskData
			d.Elements, d.Params[0] = 2, 9 // block 1 is empty
			d.In[0], d.Out[0] = sched.StreamOf(words), sched.StreamOf(make([]uint32, 2))
			return d
		}, check: func(t *testing.T, d *sched.TaskData) {
			if out := sched.View[uint32](d.Out[0]); out[0] != 0xe3069283 || out[1] != 0 {
				t.Fatalf("CRCs %#x, want [0xe3069283 0]", out)
			}
		}},
		{name: "saxpy", id: Saxpy, data: func() sched.TaskData {
			x, y := []float32{1, 2, -3}, []float32{3, 4, 0.25}
			var d sched.TaskData
			d.Elements, d.Params[0] = 3, math.Float32bits(2)
			// In place: out is y, which is also an input.
			d.In[0], d.In[1], d.Out[0] = sched.StreamOf(x), sched.StreamOf(y), sched.StreamOf(y)
			return d
		}, check: func(t *testing.T, d *sched.TaskData) {
			if y := sched.View[float32](d.Out[0]); y[0] != 5 || y[1] != 8 || y[2] != -5.75 {
				t.Fatalf("saxpy %v, want [5 8 -5.75]", y)
			}
		}},
	}
}

// TestGPUScan composes a multi-level exclusive scan (AddScan: a dependency
// chain of ScanReduceU32 and ScanDownsweepU32 tasks) on the GPU; the
// result must be bit-exact against a plain sequential scan.
func TestGPUScan(t *testing.T) {
	e := newGPUEnv(t, false, gpu.ExecutorOptions{}, sched.Config{})
	r := rng(77)
	for _, n := range []int{ScanBlock, ScanBlock * 300, ScanBlock*ScanBlock*2 + ScanBlock*5} {
		values := make([]uint32, n)
		for i := range values {
			values[i] = r.Uint32() >> uint(r.IntN(32))
		}
		out := make([]uint32, n)
		scratch := make([]uint32, ScanScratchLen(n))
		id, err := AddScan(e.main, sched.Task{Affinity: sched.GPU}, values, out, scratch)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.main.Wait(id); err != nil {
			t.Fatalf("scan of %d values on the GPU: %v", n, err)
		}
		want := refExclusiveScan(values, 0)
		for i := range want {
			if out[i] != want[i] {
				t.Fatalf("n=%d: scan[%d] = %d, want %d (bit-exact)", n, i, out[i], want[i])
			}
		}
	}
}

// TestGPUChainPoseToSkin is the crowd's GPU pipeline: LocalToModelSkin
// writes the skinning palette into a GPU-resident buffer, and SkinLBS
// (storage palette) and SkinLBSUniform (the same buffer bound as a 64 KiB
// uniform block) read it in place, each depending on the pose task. Only
// the host inputs go up and only the skinned vertices come back:
//
//   - the palette read back from the buffer matches the CPU chain's within
//     LocalToModel's tolerance, 1e-4*max(1,|cpu|);
//   - the skinned vertices match the CPU skinning of that very palette
//     within the skinning tolerance, 2e-5*max(1,|cpu|);
//   - and the CPU chain end to end within 1e-3*max(1,|cpu|): palette
//     errors of 1e-4 relative, times vertex coordinates up to sqrt(3),
//     summed over the four weighted bones and three coordinates.
func TestGPUChainPoseToSkin(t *testing.T) {
	forDevices(t, func(t *testing.T, staging bool) {
		e := newGPUEnv(t, staging, gpu.ExecutorOptions{}, sched.Config{})
		const (
			chars = 11  // 11*90 = 990 bones: fits one uniform block (1024)
			bones = 90  // per skeleton
			nv    = 777 // vertices per character
			items = chars * nv
		)
		r := rng(2024)
		local := randLocal(r, chars*bones)
		parents := randParents(r, bones)
		inv := randRigidPalette(r, bones)
		verts := randSkinVertices(r, nv, bones)

		// The palette buffer is a whole uniform block; the model matrices
		// stay on the GPU too (nobody reads them).
		pal, err := e.dev.NewBuffer(UniformPaletteBytes)
		if err != nil {
			t.Fatal(err)
		}
		defer pal.Close()
		model, err := e.dev.NewBuffer(chars * bones * 64)
		if err != nil {
			t.Fatal(err)
		}
		defer model.Close()

		pose := sched.Task{Kernel: LocalToModelSkin, Affinity: sched.GPU}
		pose.Data.Elements, pose.Data.Params[0] = chars, bones
		pose.Data.In[0] = stridedStream(local, bones)
		pose.Data.In[1] = sched.StreamOf(parents)
		pose.Data.In[2] = sched.StreamOf(inv)
		pose.Data.Out[0] = model.Stream(bones*64, chars, 0)
		pose.Data.Out[1] = pal.Stream(bones*64, chars, 0)
		poseID, err := e.main.Add(&pose)
		if err != nil {
			t.Fatal(err)
		}
		skin := func(id sched.KernelID, palette sched.Stream) ([]SkinnedVertex, sched.TaskID) {
			out := make([]SkinnedVertex, items)
			task := sched.Task{Kernel: id, Affinity: sched.GPU, Dependency: poseID}
			task.Data = skinTask(verts, palette, out, nv, bones)
			tid, err := e.main.Add(&task)
			if err != nil {
				t.Fatal(err)
			}
			return out, tid
		}
		gpuLBS, id1 := skin(SkinLBS, pal.Stream(64, chars*bones, 0))
		gpuUni, id2 := skin(SkinLBSUniform, pal.Stream(64, UniformLBSBones, 0))
		for _, id := range []sched.TaskID{id1, id2} {
			if err := e.main.Wait(id); err != nil {
				t.Fatalf("chained skinning: %v", err)
			}
		}
		e.obs.wait(t, 3)

		// Nothing but the host streams crossed: local, parents, inverse
		// bind and the bind-pose mesh (twice) up; two skinned meshes down.
		st := e.exec.Stats()
		up := uint64(len(local)*48 + len(parents)*4 + len(inv)*64 + 2*len(verts)*48)
		if down := uint64(2 * items * 24); st.BytesUp != up || st.BytesDown != down {
			t.Fatalf("bytes up %d, down %d; want %d and %d (the palette must stay on the GPU)", st.BytesUp, st.BytesDown, up, down)
		}

		// The CPU chain.
		cpuPal := make([]Mat4, chars*bones)
		pd, _, _ := poseTask(local, parents, bones, inv)
		pd.Out[1] = stridedStream(cpuPal, bones)
		if err := runDirect(t, LocalToModelSkin, &pd, 0, chars); err != nil {
			t.Fatal(err)
		}
		cpuOut := make([]SkinnedVertex, items)
		sd := skinTask(verts, sched.StreamOf(cpuPal), cpuOut, nv, bones)
		if err := runDirect(t, SkinLBS, &sd, 0, items); err != nil {
			t.Fatal(err)
		}

		// Stage 1: the GPU palette.
		gpuPal := make([]Mat4, UniformLBSBones)
		if err := pal.Read(0, sched.StreamOf(gpuPal).Bytes); err != nil {
			t.Fatal(err)
		}
		compareOutput(t, LocalToModelSkin, 1, sched.StreamOf(gpuPal[:chars*bones]).Bytes, sched.StreamOf(cpuPal).Bytes, -1)

		// Stage 2: skinning of the GPU's palette, on the CPU.
		ref := make([]SkinnedVertex, items)
		rd := skinTask(verts, sched.StreamOf(gpuPal[:chars*bones]), ref, nv, bones)
		if err := runDirect(t, SkinLBS, &rd, 0, items); err != nil {
			t.Fatal(err)
		}
		for _, got := range [][]SkinnedVertex{gpuLBS, gpuUni} {
			compareOutput(t, SkinLBS, 0, sched.StreamOf(got).Bytes, sched.StreamOf(ref).Bytes, -1)
			g, w := f32bytes(sched.StreamOf(got).Bytes), f32bytes(sched.StreamOf(cpuOut).Bytes)
			for i := range g {
				if d := math.Abs(float64(g[i] - w[i])); !(d <= 1e-3*math.Max(1, math.Abs(float64(w[i])))) {
					t.Fatalf("float %d: GPU chain %v, CPU chain %v: beyond 1e-3*max(1,|cpu|)", i, g[i], w[i])
				}
			}
		}
	})
}

// runReference runs kernel id's CPU function on all of d with the Go loops
// of the streaming kernels (streamFast cleared): the shaders' order of
// operations.
func runReference(t *testing.T, id sched.KernelID, d *sched.TaskData) error {
	defer func(f bool) { streamFast = f }(streamFast)
	streamFast = false
	return runDirect(t, id, d, 0, d.Elements)
}

// compareFastSums checks the GPU's SumF32 and Avg32F32 output gpuOut
// against the CPU kernel's AVX2 loop (when this CPU has it) by the stated
// tolerance, sumTolerance of each block's inputs: the GPU sums in index
// order, the assembly in 32 partial sums.
func compareFastSums(t *testing.T, id sched.KernelID, d *sched.TaskData, gpuOut []byte) {
	t.Helper()
	if (id != SumF32 && id != Avg32F32) || !streamHasAsm {
		return
	}
	defer func(f bool) { streamFast = f }(streamFast)
	streamFast = true
	clearOutputs(d)
	if err := runDirect(t, id, d, 0, d.Elements); err != nil {
		t.Fatal(err)
	}
	f, scale := uint64(SumFactor), 1.0
	if id == Avg32F32 {
		f, scale = Avg32Factor, 1.0/Avg32Factor
	}
	x := sched.View[float32](d.In[0])
	g, c := f32bytes(gpuOut), sched.View[float32](d.Out[0])
	valid := validCount(d, f)
	for i := range c {
		lo, hi := blockRange(uint32(i), f, valid)
		tol := sumTolerance(x[lo:hi], scale)
		if i == partialBlock(id, len(c)) {
			tol = math.Max(tol, 3*math.Abs(float64(c[i]))*0x1p-23) // 3 ULP of the division
		}
		if diff := math.Abs(float64(g[i]) - float64(c[i])); !(diff <= tol) {
			t.Fatalf("kernel %d block %d: gpu %v, CPU AVX2 %v: |diff| %g > tolerance %g", id, i, g[i], c[i], diff, tol)
		}
	}
}
