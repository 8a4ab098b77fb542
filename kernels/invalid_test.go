package kernels

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/shaders"
)

// Every invalid registration and every invalid stream, enumerated (ozz's
// habit: the invalid inputs before the numbers).

func wantErr(t *testing.T, what string, err error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one containing %q", what, substr)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("%s: error %q does not contain %q", what, err, substr)
	}
}

// spvWords and spvBytes convert between a module's bytes and words.
func spvWords(b []byte) []uint32 {
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

func spvBytes(w []uint32) []byte {
	b := make([]byte, 4*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// patch rewrites, in a copy of module b, operand word `operand` (after the
// opcode word) of the nth instruction with opcode op whose operands match
// match (-1 = any), and returns the copy. It fails the test if no
// instruction matched.
func patch(t *testing.T, b []byte, op uint32, match []int64, nth int, operand int, value uint32) []byte {
	t.Helper()
	w := spvWords(b)
	seen := 0
	for pos := 5; pos < len(w); pos += int(w[pos] >> 16) {
		if w[pos]&0xffff != op {
			continue
		}
		in := w[pos+1 : pos+int(w[pos]>>16)]
		ok := len(in) >= len(match) && operand < len(in)
		for i, m := range match {
			if ok && m >= 0 && in[i] != uint32(m) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		if seen == nth {
			in[operand] = value
			return spvBytes(w)
		}
		seen++
	}
	t.Fatalf("patch: no instruction %d matching %v (#%d)", op, match, nth)
	return nil
}

func definition(t *testing.T, id sched.KernelID) (sched.Kernel, *bind.Binding) {
	t.Helper()
	k, err := Definition(id)
	if err != nil {
		t.Fatal(err)
	}
	return k, bind.Of(&k)
}

func TestCheckRefuses(t *testing.T) {
	saxpySPV := shaders.MustSPIRV("saxpy")
	lbsSPV := shaders.MustSPIRV("skin_lbs")
	lbsUniformSPV := shaders.MustSPIRV("skin_lbs_uniform")
	any := int64(-1)
	cases := []struct {
		name  string
		id    sched.KernelID
		edit  func(k *sched.Kernel, b *bind.Binding)
		error string
	}{
		{"no SPIR-V", Saxpy, func(k *sched.Kernel, b *bind.Binding) { b.SPIRV = nil }, "spirv: 0 bytes"},
		{"not SPIR-V", Saxpy, func(k *sched.Kernel, b *bind.Binding) { b.SPIRV = []byte("#version 450\nvoid main() {}\n") }, "bad magic"},
		{"wrong entry point", Saxpy, func(k *sched.Kernel, b *bind.Binding) { b.Entry = "saxpy" }, `no entry point "saxpy"`},
		{"not a compute shader", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opEntryPoint, nil, 0, 0, 4)
		}, "is a Fragment shader, want GLCompute"},
		{"fixed workgroup size", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opDecorate, []int64{any, decSpecID, 0}, 0, 2, 3)
		}, "local_size_x_id = 0"},
		{"push constants too big", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opMemberDecorate, []int64{any, 2, decOffset, 36}, 0, 3, 100)
		}, "push-constant block is 104 bytes"},
		{"descriptor set 1", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opDecorate, []int64{any, decDescriptorSet, 0}, 1, 2, 1)
		}, "descriptor set 1"},
		{"binding 9", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opDecorate, []int64{any, decBinding, 4}, 0, 2, 9)
		}, "outside the contract's bindings 0-7"},
		{"binding twice", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opDecorate, []int64{any, decBinding, 1}, 0, 2, 0)
		}, "binding 0 is declared twice"},
		{"no descriptor set", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opDecorate, []int64{any, decDescriptorSet, 0}, 0, 1, 30)
		}, "lacks DescriptorSet or Binding"},
		{"image, not a buffer", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			b.SPIRV = patch(t, saxpySPV, opVariable, []int64{any, any, scUniform}, 0, 2, scUniformConstant)
		}, "is a non-buffer resource"},
		{"binding the kernel does not declare (input)", Saxpy, func(k *sched.Kernel, b *bind.Binding) { k.In = k.In[:1] }, "shader binding 1 reads input stream 1, but the kernel declares 1 inputs"},
		{"binding the kernel does not declare (output)", Saxpy, func(k *sched.Kernel, b *bind.Binding) { k.Out = nil }, "shader binding 4 writes output stream 0, but the kernel declares 0 outputs"},
		{"missing output binding", Saxpy, func(k *sched.Kernel, b *bind.Binding) {
			k.Out = append(k.Out, sched.StreamSpec{Name: "w", Stride: 4})
		}, `binding 5 (output stream 1 "w") is never stored to`},
		{"UniformIn on a storage buffer", SkinLBS, func(k *sched.Kernel, b *bind.Binding) { b.UniformIn[1] = true }, "binding 1 (input \"palette\") is a storage buffer in the shader, but Binding.UniformIn[1] = true says uniform block"},
		{"uniform block without UniformIn", SkinLBSUniform, func(k *sched.Kernel, b *bind.Binding) { b.UniformIn[1] = false }, "is a uniform block in the shader, but Binding.UniformIn[1] = false"},
		{"UniformIn of an undeclared input", SkinLBS, func(k *sched.Kernel, b *bind.Binding) { b.UniformIn[3] = true }, "UniformIn[3] is set but the kernel declares 2 inputs"},
		{"uniform output", SkinLBSUniform, func(k *sched.Kernel, b *bind.Binding) {
			// Move the uniform palette to binding 5 and declare two outputs.
			b.SPIRV = patch(t, lbsUniformSPV, opDecorate, []int64{any, decBinding, 1}, 0, 2, 5)
			k.In = k.In[:1]
			b.UniformIn = [4]bool{}
			k.Out = append(k.Out, sched.StreamSpec{Name: "extra"})
		}, "outputs must be storage buffers"},
		{"workgroup too large", SkinLBS, func(k *sched.Kernel, b *bind.Binding) { b.LocalSize = 2048 }, "LocalSize 2048 exceeds 1024"},
		{"storage module under a uniform kernel", SkinLBSUniform, func(k *sched.Kernel, b *bind.Binding) { b.SPIRV = lbsSPV }, "is a storage buffer in the shader"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, b := definition(t, c.id)
			c.edit(&k, b)
			err := Check(&k)
			wantErr(t, c.name, err, c.error)
			if !strings.Contains(err.Error(), k.Name) {
				t.Fatalf("error %q does not name the kernel %q", err, k.Name)
			}
		})
	}
}

func TestCheckPassesWithoutGPU(t *testing.T) {
	k, _ := definition(t, Saxpy)
	k.GPU = nil
	if err := Check(&k); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	reg := sched.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "register twice", Register(reg), "already taken")

	// An ID taken by another package: nothing is registered.
	reg = sched.NewRegistry()
	noop := func(*sched.Ctx, *sched.TaskData) error { return nil }
	if err := reg.Register(Avg32F32, sched.Kernel{Name: "someone_else", CPU: noop}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "ID conflict", Register(reg), `ID 9 ("reduce_avg32") is already taken by "someone_else"`)
	for _, id := range IDs() {
		if id != Avg32F32 && reg.Lookup(id) != nil {
			t.Fatalf("kernel %d registered although Register failed", id)
		}
	}

	for _, id := range []sched.KernelID{sched.KernelNone, lastID, sched.FirstHandedID, 1000} {
		_, err := Definition(id)
		wantErr(t, "Definition of a foreign ID", err, "is not one of this package's")
		if !errors.Is(err, sched.ErrUnknownKernel) {
			t.Fatalf("Definition(%d) error does not wrap sched.ErrUnknownKernel", id)
		}
	}
	if n := len(IDs()); n != int(lastID-1) || IDs()[n-1] >= sched.FirstHandedID {
		t.Fatalf("IDs %v reach the handed-out range (from %d)", IDs(), sched.FirstHandedID)
	}
}

// TestInvalidStreams builds a valid task for every kernel, checks that the
// scheduler accepts it, then breaks each declared stream in every way the
// declaration can catch and checks that Add refuses the task.
func TestInvalidStreams(t *testing.T) {
	reg := sched.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	s, err := sched.New(sched.Config{Kernels: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range IDs() {
		k := reg.Lookup(id)
		good := fixture(t, id, 16)
		id0, err := s.Add(&sched.Task{Kernel: id, Data: good})
		if err != nil {
			t.Fatalf("%s: valid task refused: %v", k.Name, err)
		}
		if err := s.Wait(id0); err != nil {
			t.Fatalf("%s: valid task failed: %v", k.Name, err)
		}
		try := func(what string, edit func(d *sched.TaskData), substr string) {
			t.Helper()
			d := good
			edit(&d)
			if _, err := s.Add(&sched.Task{Kernel: id, Data: d}); err == nil {
				t.Fatalf("%s: %s: accepted", k.Name, what)
			} else if !strings.Contains(err.Error(), substr) {
				t.Fatalf("%s: %s: error %q does not contain %q", k.Name, what, err, substr)
			}
		}
		for dir, specs := range map[string][]sched.StreamSpec{"input": k.In, "output": k.Out} {
			pick := func(d *sched.TaskData, i int) *sched.Stream {
				if dir == "input" {
					return &d.In[i]
				}
				return &d.Out[i]
			}
			for i, sp := range specs {
				if sp.Stride != 0 {
					try(dir+" stride", func(d *sched.TaskData) { pick(d, i).Stride += 4 }, "has stride")
				}
				if sp.Rate == sched.PerItem {
					try(dir+" count", func(d *sched.TaskData) {
						st := pick(d, i)
						st.Count++
						st.Bytes = append(st.Bytes[:len(st.Bytes):len(st.Bytes)], make([]byte, st.Stride)...)
					}, "elements, task needs")
					try(dir+" count", func(d *sched.TaskData) { pick(d, i).Count-- }, "elements, task needs")
				}
				try(dir+" without memory", func(d *sched.TaskData) { pick(d, i).Bytes = nil }, "but no memory")
				try(dir+" too short", func(d *sched.TaskData) {
					st := pick(d, i)
					st.Bytes = st.Bytes[:len(st.Bytes)-1]
				}, "fewer than count")
			}
			if len(specs) < sched.MaxStreams {
				try("undeclared "+dir, func(d *sched.TaskData) { *pick(d, len(specs)) = sched.StreamOf(make([]uint32, 4)) }, "given but the kernel declares")
			}
		}
	}
}

// TestCPURefuses: data that the declaration cannot catch (device-only or
// misaligned memory, too-short whole streams, bad indices and parameters)
// makes the CPU kernel return an error, never panic.
func TestCPURefuses(t *testing.T) {
	for _, id := range IDs() {
		k, _ := definition(t, id)
		good := fixture(t, id, 16)
		run := func(what string, d sched.TaskData, substr string) {
			t.Helper()
			d.Begin, d.End = 0, d.Elements
			err := k.CPU(nil, &d)
			if err == nil {
				t.Fatalf("%s: %s: no error", k.Name, what)
			}
			if !strings.Contains(err.Error(), substr) {
				t.Fatalf("%s: %s: error %q does not contain %q", k.Name, what, err, substr)
			}
		}
		for i := range k.In {
			d := good
			d.In[i].Bytes, d.In[i].Buffer = nil, 7
			run("device-only input", d, "no host memory")
			d = good
			d.In[i].Bytes = misalign(d.In[i].Bytes)
			run("misaligned input", d, "aligned")
		}
		for i := range k.Out {
			d := good
			d.Out[i].Bytes, d.Out[i].Buffer = nil, 7
			run("device-only output", d, "no host memory")
			d = good
			d.Out[i].Bytes = misalign(d.Out[i].Bytes)
			run("misaligned output", d, "aligned")
		}
		// Every kernel checks the range against its outputs.
		d := good
		d.Elements++
		d.In[0].Count = 0
		run("range beyond the streams", d, "needs")
	}

	// Kernel-specific checks.
	type edit struct {
		id     sched.KernelID
		what   string
		change func(d *sched.TaskData)
		substr string
	}
	for _, e := range []edit{
		{SkinLBS, "joint outside the palette", func(d *sched.TaskData) {
			v := append([]SkinVertex(nil), sched.View[SkinVertex](d.In[0])...)
			v[0].Joints = PackJoints(0, 0, 255, 0) // instance 7: 7*130+255 >= 8*130
			d.In[0] = sched.StreamOf(v)
		}, "item 14: joints 0x00ff0000 with palette base 910 reach outside the palette of 1040 bones"},
		{SkinDQS, "joint outside the palette", func(d *sched.TaskData) { d.Params[1] = 1 << 30 }, "outside the palette"},
		{SkinLBS, "fewer vertices than an instance", func(d *sched.TaskData) { d.Params[0] = d.In[0].Count + 1 }, "Params[0] (vertices per instance)"},
		{SkinDQS, "fewer vertices than items", func(d *sched.TaskData) { d.Params[0] = 0 }, "one vertex per item"},
		{SkinLBSUniform, "palette too big for a uniform block", func(d *sched.TaskData) {
			d.In[1] = sched.StreamOf(make([]Mat4, UniformLBSBones+1))
		}, "more than the 1024 a uniform palette holds"},
		{SkinDQSUniform, "palette too big for a uniform block", func(d *sched.TaskData) {
			d.In[1] = sched.StreamOf(make([]DualQuat, UniformDQSBones+1))
		}, "more than the 2048"},
		{LocalToModel, "no bones", func(d *sched.TaskData) { d.Params[0] = 0 }, "Params[0] (bones per skeleton) is 0"},
		{LocalToModel, "stride is not bones x 48", func(d *sched.TaskData) { d.Params[0]-- }, "want 4272 (89 x 48)"},
		{LocalToModel, "parents shorter than a skeleton", func(d *sched.TaskData) { d.In[1].Count = fixPoseBones - 1 }, "input stream 1: 89 elements"},
		{LocalToModel, "parent after child", func(d *sched.TaskData) {
			p := append([]int32(nil), sched.View[int32](d.In[1])...)
			p[5] = 5
			d.In[1] = sched.StreamOf(p)
		}, "bone 5 has parent 5"},
		{LocalToModelSkin, "inverse binds shorter than a skeleton", func(d *sched.TaskData) { d.In[2].Count = 3 }, "input stream 2: 3 elements"},
		{ScanDownsweepU32, "values shorter than the range", func(d *sched.TaskData) { d.In[1].Count = 100 }, "input stream 1: 100 elements"},
	} {
		k, _ := definition(t, e.id)
		d := fixture(t, e.id, 16)
		e.change(&d)
		err := k.CPU(nil, &d)
		if err == nil || !strings.Contains(err.Error(), e.substr) {
			t.Fatalf("%s: %s: error %v, want one containing %q", k.Name, e.what, err, e.substr)
		}
	}
}

// misalign returns a copy of b that starts one byte past an aligned address.
func misalign(b []byte) []byte {
	c := make([]byte, len(b)+1)
	return c[1:]
}

// TestShortStreamsNamed: a stream one element short, or with the
// wrong stride, is refused with an error naming the stream.
func TestShortStreamsNamed(t *testing.T) {
	s := cpuSched(t)
	x := make([]float32, 100)
	y := make([]float32, 100)
	tk := sched.Task{Kernel: Saxpy}
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
	tk = sched.Task{Kernel: SumF32}
	tk.Data.Elements = 4
	tk.Data.In[0], tk.Data.Out[0] = sched.StreamOf(make([]float32, 4*256-1)), sched.StreamOf(sums)
	if err := run(s, &tk); err == nil {
		t.Errorf("sum with its input one short: no error")
	} else {
		t.Logf("short sum input: %v", err)
	}
}

// TestMisalignedStreams: a stream whose memory starts one byte into a
// buffer is refused naming the stream and the alignment, for every kind of
// kernel (input and output).
func TestMisalignedStreams(t *testing.T) {
	s := cpuSched(t)
	raw := make([]byte, 4*1024+8)
	mis := func(n int) sched.Stream { return sched.Stream{Bytes: raw[1 : 1+4*n], Stride: 4, Count: uint32(n)} }
	x := make([]float32, 256)
	for _, k := range []sched.KernelID{Saxpy, SumF32, MinMaxF32, ExpandLerp, ScanReduceU32, CRC32CBlocks} {
		var tk sched.Task
		tk.Kernel = k
		switch k {
		case Saxpy:
			tk.Data.Elements = 256
			tk.Data.In[0], tk.Data.In[1], tk.Data.Out[0] = mis(256), sched.StreamOf(x), sched.StreamOf(make([]float32, 256))
		case SumF32, MinMaxF32, ScanReduceU32:
			tk.Data.Elements = 1
			tk.Data.In[0], tk.Data.Out[0] = mis(256), sched.StreamOf(make([]float32, 2))
			tk.Data.Out[0].Count = 1
			if k == MinMaxF32 {
				tk.Data.Out[0] = sched.StreamOf(make([]MinMax, 1))
			}
		case ExpandLerp:
			tk.Data.Elements = 1
			tk.Data.In[0] = sched.StreamOf(make([]Segment, 1))
			tk.Data.Out[0] = mis(8)
		case CRC32CBlocks:
			tk.Data.Elements = 1
			tk.Data.In[0], tk.Data.Out[0] = mis(1024), sched.StreamOf(make([]uint32, 1))
		}
		err := run(s, &tk)
		if err == nil || !strings.Contains(err.Error(), "stream 0") || !strings.Contains(err.Error(), "aligned") {
			t.Errorf("kernel %d with a misaligned stream: %v", k, err)
		}
	}
}
