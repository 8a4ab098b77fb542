package placement

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/vkjobs/vkjobs/affinity/spu"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/internal/glslc"
	"github.com/vkjobs/vkjobs/sched"
)

// wholeKind says whether a shape kernel's last input is a Whole-rate
// stream, and how the GPU binds it.
type wholeKind int

const (
	wholeNone    wholeKind = iota // every stream PerItem
	wholeUniform                  // last input Whole, a uniform block of 4 uvec4
	wholeStorage                  // last input Whole, a storage buffer of wholeWords uint
)

func (w wholeKind) String() string {
	return [...]string{"per-item", "whole-uniform", "whole-storage"}[w]
}

// wholeWords is the element count of a wholeStorage input: prime, so that
// the items' indices into it ((base+j) mod wholeWords) do not line up with
// chunk or workgroup boundaries.
const wholeWords = 37

// shapeKernel is one registered kernel of the stream-shape test: nin
// inputs (the last one Whole when whole != wholeNone) and nout outputs,
// all of uint32 elements except the uniform block's uvec4.
type shapeKernel struct {
	id        sched.KernelID
	nin, nout int
	whole     wholeKind
	localSize uint32
}

func (s shapeKernel) String() string {
	return fmt.Sprintf("%din/%dout/%v", s.nin, s.nout, s.whole)
}

// items is the number of PerItem inputs.
func (s shapeKernel) items() int {
	if s.whole != wholeNone {
		return s.nin - 1
	}
	return s.nin
}

// shapeValue is output j of item base (absolute), from the item's PerItem
// inputs weighted by 2k+3 (sum), Params[0] (p0) and the Whole input's
// contribution (wv); uint32 arithmetic wraps as GLSL's uint does.
func shapeValue(j int, base, p0, sum, wv uint32) uint32 {
	return sum*uint32(j+1) + base*(0x9E3779B1+uint32(2*j)) + p0*uint32(j+5) + wv
}

// wholeValue is the Whole input's contribution to output j of item base.
func wholeValue(w wholeKind, j int, base uint32, uni [][4]uint32, words []uint32) uint32 {
	switch w {
	case wholeUniform:
		return uni[base&3][j&3]
	case wholeStorage:
		return words[(base+uint32(j))%wholeWords]
	}
	return 0
}

// cpu is the kernel's Go implementation. The item's absolute number is
// Params[7] + i: Params[7] is 0 on CPU workers and on the GPU, and the
// chunk's first item on the SPU executor (Binding.UseBase), whose
// kernel sees every stream rebased to the chunk.
func (s shapeKernel) cpu(_ *sched.Ctx, d *sched.TaskData) error {
	var ins, outs [sched.MaxStreams][]uint32
	for k := range s.items() {
		ins[k] = sched.View[uint32](d.In[k])
	}
	for j := range s.nout {
		outs[j] = sched.View[uint32](d.Out[j])
	}
	var uni [][4]uint32
	var words []uint32
	switch s.whole {
	case wholeUniform:
		uni = sched.View[[4]uint32](d.In[s.nin-1])
	case wholeStorage:
		words = sched.View[uint32](d.In[s.nin-1])
	}
	for i := d.Begin; i < d.End; i++ {
		base := d.Params[7] + i
		var sum uint32
		for k := range s.items() {
			sum += ins[k][i] * uint32(2*k+3)
		}
		for j := range s.nout {
			outs[j][i] = shapeValue(j, base, d.Params[0], sum, wholeValue(s.whole, j, base, uni, words))
		}
	}
	return nil
}

// glsl is the kernel's compute shader: the same computation as cpu.
func (s shapeKernel) glsl() string {
	var b strings.Builder
	b.WriteString("#version 450\nlayout(local_size_x_id = 0) in;\n")
	for k := range s.items() {
		fmt.Fprintf(&b, "layout(set = 0, binding = %d) readonly buffer In%d { uint in%d[]; };\n", k, k, k)
	}
	switch s.whole {
	case wholeUniform:
		fmt.Fprintf(&b, "layout(set = 0, binding = %d) uniform InW { uvec4 c[4]; } wu;\n", s.nin-1)
	case wholeStorage:
		fmt.Fprintf(&b, "layout(set = 0, binding = %d) readonly buffer InW { uint w[]; };\n", s.nin-1)
	}
	for j := range s.nout {
		fmt.Fprintf(&b, "layout(set = 0, binding = %d) writeonly buffer Out%d { uint out%d[]; };\n", 4+j, j, j)
	}
	b.WriteString(`layout(push_constant) uniform PC { uint params[8]; uint begin; uint end; } pc;
void main() {
    uint i = pc.begin + gl_GlobalInvocationID.x;
    if (i >= pc.end) {
        return;
    }
    uint base = pc.params[7] + i;
    uint sum = 0u;
`)
	for k := range s.items() {
		fmt.Fprintf(&b, "    sum += in%d[i] * %du;\n", k, 2*k+3)
	}
	for j := range s.nout {
		wv := "0u"
		switch s.whole {
		case wholeUniform:
			wv = fmt.Sprintf("wu.c[base & 3u][%d]", j&3)
		case wholeStorage:
			wv = fmt.Sprintf("w[(base + %du) %% %du]", j, wholeWords)
		}
		fmt.Fprintf(&b, "    out%d[i] = sum * %du + base * %du + pc.params[0] * %du + %s;\n",
			j, j+1, uint32(0x9E3779B1+2*j), j+5, wv)
	}
	b.WriteString("}\n")
	return b.String()
}

// compileUnoptimized compiles a compute shader as glslc.Compile does, but
// without -O. A kernel without outputs has no observable effect, so the
// optimizer removes every resource and the push-constant reads, and
// Register's binding check would then (rightly) refuse the module.
func compileUnoptimized(tb testing.TB, src string) []byte {
	tb.Helper()
	path, err := exec.LookPath("glslc")
	if err != nil {
		return glslc.Compile(tb, "comp", src) // skips or fails as the helper does
	}
	dir := tb.TempDir()
	in, out := filepath.Join(dir, "k.comp"), filepath.Join(dir, "k.spv")
	must(tb, os.WriteFile(in, []byte(src), 0o644))
	if msg, err := exec.Command(path, "--target-env=vulkan1.0", "-O0", "-o", out, in).CombinedOutput(); err != nil {
		tb.Fatalf("glslc: %v\n%s\n%s", err, msg, src)
	}
	spv, err := os.ReadFile(out)
	must(tb, err)
	return spv
}

// countingPlacer records where a Placer put Auto tasks.
type countingPlacer struct {
	p                  sched.Placer
	mu                 sync.Mutex
	gpu, cpu, spu, cos int
}

func (c *countingPlacer) Place(id sched.KernelID, k *sched.Kernel, d *sched.TaskData) (sched.Affinity, uint32) {
	where, split := c.p.Place(id, k, d)
	c.mu.Lock()
	switch {
	case split > 0:
		c.cos++
	case where == sched.GPU:
		c.gpu++
	case where == sched.SPU:
		c.spu++
	default:
		c.cpu++
	}
	c.mu.Unlock()
	return where, split
}

// TestEveryStreamShapeMatchesReference runs a kernel of every stream-count
// shape that Register accepts, 0..MaxStreams inputs by 0..MaxStreams
// outputs, each with PerItem streams only and (with at least one input)
// with a Whole last input bound as a uniform block or as a storage buffer,
// on CPU workers, the GPU executor, the SPU executor and under Auto
// placement, over 0, 1, 63, 64, 65 and 100003 items, and compares every
// output element with a reference computed here. The PerItem kernels use
// workgroups of one invocation, so that on a device whose
// maxComputeWorkGroupCount is below 100003 (lavapipe: 65535) the largest
// task is dispatched in several chunks, the later ones with begin != 0.
func TestEveryStreamShapeMatchesReference(t *testing.T) {
	dev := device(t, true)
	reg := sched.NewRegistry()
	var kernels []shapeKernel
	id := sched.KernelID(1)
	for nin := 0; nin <= sched.MaxStreams; nin++ {
		for nout := 0; nout <= sched.MaxStreams; nout++ {
			for _, w := range []wholeKind{wholeNone, wholeUniform, wholeStorage} {
				if w != wholeNone && nin == 0 {
					continue
				}
				sk := shapeKernel{id: id, nin: nin, nout: nout, whole: w, localSize: 64}
				if w == wholeNone {
					sk.localSize = 1
				}
				id++
				k := sched.Kernel{Name: "shape-" + sk.String(), Kind: sched.Streaming, Grain: 4096, CPU: sk.cpu,
					SPU: &spu.Binding{UseBase: true, BaseParam: 7}}
				for i := range nin {
					k.In = append(k.In, sched.StreamSpec{Name: fmt.Sprintf("in%d", i), Stride: 4})
				}
				b := &gpu.Binding{LocalSize: sk.localSize}
				switch w {
				case wholeUniform:
					k.In[nin-1] = sched.StreamSpec{Name: "table", Stride: 16, Rate: sched.Whole}
					b.UniformIn[nin-1] = true
				case wholeStorage:
					k.In[nin-1] = sched.StreamSpec{Name: "table", Stride: 4, Rate: sched.Whole}
				}
				for range nout {
					// The user's declaration: stride only, no name.
					k.Out = append(k.Out, sched.StreamSpec{Stride: 4})
				}
				if nout == 0 {
					b.SPIRV = compileUnoptimized(t, sk.glsl())
				} else {
					b.SPIRV = glslc.Compile(t, "comp", sk.glsl())
				}
				k.GPU = b
				if err := reg.Register(sk.id, k); err != nil {
					t.Fatalf("%v: %v\n%s", sk, err, sk.glsl())
				}
				kernels = append(kernels, sk)
			}
		}
	}
	lim := dev.Limits()
	const big = 100_003
	if lim.MaxComputeWorkGroupCount < big {
		t.Logf("maxComputeWorkGroupCount %d: the per-item kernels' %d-item tasks are dispatched in %d chunks",
			lim.MaxComputeWorkGroupCount, big, (big+lim.MaxComputeWorkGroupCount-1)/lim.MaxComputeWorkGroupCount)
	} else {
		t.Logf("maxComputeWorkGroupCount %d: no task of this test is dispatched in chunks", lim.MaxComputeWorkGroupCount)
	}

	_, errs0 := dev.Messages()
	must(t, dev.PreparePipelines(reg))
	gx, err := gpu.NewExecutor(dev, gpu.ExecutorOptions{})
	must(t, err)
	x, err := spu.New(spu.Options{})
	if err != nil {
		gx.Close()
		t.Fatal(err)
	}
	placer := New(Options{})
	cp := &countingPlacer{p: placer}
	s, err := sched.New(sched.Config{Kernels: reg, Placer: cp, Observer: placer})
	if err != nil {
		gx.Close()
		x.Close()
		t.Fatal(err)
	}
	must(t, s.AttachExecutor(sched.ExecGPU, gx))
	must(t, s.AttachExecutor(sched.ExecSPU, x))
	placer.Attach(s)
	m, err := s.RegisterThread("main")
	must(t, err)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("sched Close: %v", err)
		}
		if msgs, errs := dev.Messages(); errs > errs0 {
			for _, m := range msgs {
				if m.Severity == gpu.SeverityError {
					t.Errorf("validation: %v", m)
				}
			}
		}
	})

	executors := []struct {
		name string
		aff  sched.Affinity
	}{{"CPU", sched.AnyWorker}, {"GPU", sched.GPU}, {"SPU", sched.SPU}, {"Auto", sched.Auto}}
	sizes := []int{0, 1, 63, 64, 65, big}
	// results[shape][executor]: tasks that matched, of those run.
	type tally struct{ ok, run int }
	results := map[string]*[4]tally{}
	failed := 0
	r := rng(24)
	for _, sk := range kernels {
		res := &[4]tally{}
		results[fmt.Sprintf("%d x %d", sk.nin, sk.nout)+" "+sk.whole.String()] = res
		for _, n := range sizes {
			// Inputs and the reference.
			var task sched.Task
			task.Kernel = sk.id
			task.Data.Elements = uint32(n)
			task.Data.Params[0] = r.Uint32()
			var ins [sched.MaxStreams][]uint32
			for k := range sk.items() {
				ins[k] = make([]uint32, n)
				for i := range ins[k] {
					ins[k][i] = r.Uint32()
				}
				task.Data.In[k] = sched.StreamOf(ins[k])
			}
			var uni [][4]uint32
			var words []uint32
			switch sk.whole {
			case wholeUniform:
				uni = make([][4]uint32, 4)
				for q := range uni {
					uni[q] = [4]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}
				}
				task.Data.In[sk.nin-1] = sched.StreamOf(uni)
			case wholeStorage:
				words = make([]uint32, wholeWords)
				for q := range words {
					words[q] = r.Uint32()
				}
				task.Data.In[sk.nin-1] = sched.StreamOf(words)
			}
			want := make([][]uint32, sk.nout)
			for j := range want {
				want[j] = make([]uint32, n)
			}
			for i := range uint32(n) {
				var sum uint32
				for k := range sk.items() {
					sum += ins[k][i] * uint32(2*k+3)
				}
				for j := range sk.nout {
					want[j][i] = shapeValue(j, i, task.Data.Params[0], sum, wholeValue(sk.whole, j, i, uni, words))
				}
			}

			// The same task on every executor at once.
			var ids [4]sched.TaskID
			var outs [4][][]uint32
			for x, ex := range executors {
				tk := task
				tk.Affinity = ex.aff
				outs[x] = make([][]uint32, sk.nout)
				for j := range outs[x] {
					o := make([]uint32, n)
					for i := range o {
						o[i] = 0xA5A5A5A5 // never a result by chance, in practice
					}
					outs[x][j] = o
					tk.Data.Out[j] = sched.StreamOf(o)
				}
				ids[x], err = m.Add(&tk)
				if err != nil {
					t.Fatalf("%v, %d items, %s: Add: %v", sk, n, ex.name, err)
				}
			}
			for x, ex := range executors {
				res[x].run++
				if err := m.Wait(ids[x]); err != nil {
					// The first error whole; the others' first lines (an
					// executor's panic carries its stack).
					msg := err.Error()
					if failed++; failed > 1 {
						msg, _, _ = strings.Cut(msg, "\n")
					}
					t.Errorf("%v, %d items, %s: %s", sk, n, ex.name, msg)
					continue
				}
				bad := false
				for j := range sk.nout {
					for i := range want[j] {
						if outs[x][j][i] != want[j][i] {
							t.Errorf("%v, %d items, %s: out%d[%d] = %#x, want %#x", sk, n, ex.name, j, i, outs[x][j][i], want[j][i])
							bad = true
							break
						}
					}
				}
				if !bad {
					res[x].ok++
				}
			}
		}
	}

	// The table of results (go test -v shows it).
	names := make([]string, 0, len(results))
	for k := range results {
		names = append(names, k)
	}
	sort.Strings(names)
	var tb strings.Builder
	fmt.Fprintf(&tb, "%-22s %-8s %-8s %-8s %-8s\n", "in x out, streams", "CPU", "GPU", "SPU", "Auto")
	for _, k := range names {
		res := results[k]
		fmt.Fprintf(&tb, "%-22s", k)
		for x := range executors {
			fmt.Fprintf(&tb, " %-8s", fmt.Sprintf("%d/%d", res[x].ok, res[x].run))
		}
		tb.WriteByte('\n')
	}
	cp.mu.Lock()
	fmt.Fprintf(&tb, "Auto placed %d tasks on the GPU, %d on CPU workers, %d on the SPU, %d split GPU/CPU\n", cp.gpu, cp.cpu, cp.spu, cp.cos)
	cp.mu.Unlock()
	st := gx.Stats()
	fmt.Fprintf(&tb, "GPU executor: %d tasks, %d failed, %d command buffers", st.Tasks, st.Failed, st.Submits)
	t.Logf("%d kernels x %d sizes x %d executors:\n%s", len(kernels), len(sizes), len(executors), tb.String())
}
