package kernels

import (
	"hash/crc32"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/vkjobs/vkjobs/sched"
)

// saxpyRef computes a*x + y from copies of the inputs taken before the call.
func saxpyRef(a float32, x, y []float32) []float32 {
	o := make([]float32, len(x))
	for i := range x {
		o[i] = float32(a*x[i]) + y[i]
	}
	return o
}

// alignedF32 returns n float32 starting off bytes (a multiple of 4) past a
// 64-byte boundary of a larger buffer.
func alignedF32(n, off int) []float32 {
	buf := make([]float32, n+32)
	p := uintptr(unsafe.Pointer(&buf[0]))
	skip := int((64-p%64)%64) / 4
	return buf[skip+off/4 : skip+off/4+n]
}

func runSaxpy(t *testing.T, a float32, x, y, out []float32) error {
	t.Helper()
	var d sched.TaskData
	d.Elements = uint32(len(out))
	d.Params[0] = math.Float32bits(a)
	d.In[0] = sched.StreamOf(x)
	d.In[1] = sched.StreamOf(y)
	d.Out[0] = sched.StreamOf(out)
	return runDirect(t, Saxpy, &d, 0, uint32(len(out)))
}

// TestSaxpyEveryLengthAndAlignment runs Saxpy at every length 0..300 and
// every 4-byte alignment offset 0..28, on both CPU paths, with special
// values, against a reference.
func TestSaxpyEveryLengthAndAlignment(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-130, float32(math.Copysign(0, -1))}
	for _, fast := range []bool{false, streamHasAsm} {
		streamFast = fast
		for n := 0; n <= 300; n++ {
			for off := 0; off < 32; off += 4 {
				x, y, out := alignedF32(n, off), alignedF32(n, (off+8)%32), alignedF32(n, (off+20)%32)
				for i := range x {
					x[i] = float32(i%17) - 8.25
					y[i] = float32(i%5) * 0.3
					if i%23 == 7 {
						x[i] = specials[i%len(specials)]
					}
				}
				want := saxpyRef(1.75, x, y)
				if n == 0 {
					continue // zero elements: checked below
				}
				if err := runSaxpy(t, 1.75, x, y, out); err != nil {
					t.Fatalf("fast %v n %d off %d: %v", fast, n, off, err)
				}
				for i := range want {
					if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
						t.Fatalf("fast %v n %d off %d: out[%d] = %v, want %v", fast, n, off, i, out[i], want[i])
					}
				}
			}
		}
	}
}

// TestSaxpyOverlappingOutput: out overlaps y (or x) shifted by k elements.
// The kernel must either compute a*x+y of the inputs as they were, or
// refuse; it must never return nil with other values.
func TestSaxpyOverlappingOutput(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	for _, fast := range []bool{false, streamHasAsm} {
		streamFast = fast
		for _, n := range []int{1, 8, 33, 64, 100} {
			for _, k := range []int{-9, -1, 0, 1, 3, 32, 40} {
				for _, which := range []string{"x", "y"} {
					buf := make([]float32, n+128)
					for i := range buf {
						buf[i] = float32(i + 1)
					}
					base := 48
					in := buf[base : base+n]
					out := buf[base+k : base+k+n]
					other := make([]float32, n)
					for i := range other {
						other[i] = float32(2 * i)
					}
					x, y := other, in
					if which == "x" {
						x, y = in, other
					}
					want := saxpyRef(2, x, y)
					err := runSaxpy(t, 2, x, y, out)
					if err != nil {
						if !strings.Contains(err.Error(), "overlaps input stream") {
							t.Errorf("n %d out = %s shifted by %d: error %q does not name the overlap", n, which, k, err)
						}
						continue // refused: acceptable
					}
					for i := range want {
						if out[i] != want[i] {
							t.Errorf("fast %v n %d out = %s shifted by %d: out[%d] = %v, want %v (nil error)", fast, n, which, k, i, out[i], want[i])
							break
						}
					}
				}
			}
		}
	}
}

// reduceCase runs a float reduce kernel on x (n items of factor) with the
// given valid count.
func runReduce[O any](t *testing.T, id sched.KernelID, x []float32, out []O, valid uint32, begin, end uint32) error {
	t.Helper()
	var d sched.TaskData
	d.Elements = uint32(len(out))
	d.Params[0] = valid
	d.In[0] = sched.StreamOf(x)
	d.Out[0] = sched.StreamOf(out)
	return runDirect(t, id, &d, begin, end)
}

// TestMinMaxSpecialValues: NaNs ignored, Infs count, all-NaN block gives
// (+Inf, -Inf), denormals kept, on both CPU paths, at every valid count
// around block edges.
func TestMinMaxSpecialValues(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	nan := float32(math.NaN())
	const items = 3
	for _, fast := range []bool{false, streamHasAsm} {
		streamFast = fast
		for pattern := range 6 {
			x := alignedF32(items*SumFactor, 0)
			for i := range x {
				switch pattern {
				case 0:
					x[i] = nan
				case 1:
					x[i] = float32(i%7) - 3
					if i%11 == 0 {
						x[i] = nan
					}
				case 2:
					x[i] = 0x1p-140 * float32(1+i%5)
				case 3:
					x[i] = float32(math.Inf(1))
					if i%9 == 0 {
						x[i] = nan
					}
				case 4:
					x[i] = float32(math.Inf(-1 + 2*(i%2)))
				case 5:
					x[i] = nan
					if i%SumFactor == SumFactor-1 {
						x[i] = 5
					}
				}
			}
			for valid := uint32(0); valid <= items*SumFactor; valid++ {
				if valid > 3 && valid < items*SumFactor-3 && valid%SumFactor > 2 && valid%SumFactor < SumFactor-2 {
					continue
				}
				out := make([]MinMax, items)
				if err := runReduce(t, MinMaxF32, x, out, valid, 0, items); err != nil {
					t.Fatal(err)
				}
				n := uint64(valid)
				if n == 0 {
					n = items * SumFactor
				}
				for i := range out {
					lo, hi := blockRange(uint32(i), SumFactor, n)
					mn, mx := float32(math.Inf(1)), float32(math.Inf(-1))
					for _, v := range x[lo:hi] {
						if v == v {
							mn = min(mn, v)
							mx = max(mx, v)
						}
					}
					g := out[i]
					if g.Min != mn || g.Max != mx {
						t.Fatalf("fast %v pattern %d valid %d block %d: got %+v, want (%v, %v)", fast, pattern, valid, i, g, mn, mx)
					}
				}
			}
		}
	}
}

// TestSumSpecialValuesBothPaths: SumF32 and Avg32F32 with Inf, NaN, -0 and
// denormals agree between the assembly and Go loops (NaN where either is,
// and the sign of an all -0 block).
func TestSumSpecialValuesBothPaths(t *testing.T) {
	if !streamHasAsm {
		t.Skip("no AVX2")
	}
	defer func(f bool) { streamFast = f }(streamFast)
	negz := float32(math.Copysign(0, -1))
	for _, id := range []sched.KernelID{SumF32, Avg32F32} {
		f := SumFactor
		if id == Avg32F32 {
			f = Avg32Factor
		}
		for pattern := range 5 {
			x := alignedF32(4*f, 0)
			for i := range x {
				switch pattern {
				case 0:
					x[i] = negz
				case 1:
					x[i] = 0x1p-140
				case 2:
					x[i] = 1
					if i%f == 3 {
						x[i] = float32(math.Inf(1))
					}
				case 3:
					x[i] = 1
					if i%f == 3 {
						x[i] = float32(math.Inf(1))
					}
					if i%f == 9 {
						x[i] = float32(math.Inf(-1))
					}
				case 4:
					x[i] = 3e38
				}
			}
			var res [2][]float32
			for j, fast := range []bool{false, true} {
				streamFast = fast
				res[j] = make([]float32, 4)
				if err := runReduce(t, id, x, res[j], 0, 0, 4); err != nil {
					t.Fatal(err)
				}
			}
			for i := range res[0] {
				g, w := res[1][i], res[0][i]
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					t.Errorf("kernel %d pattern %d block %d: asm %v (%#x), go %v (%#x)", id, pattern, i, g, math.Float32bits(g), w, math.Float32bits(w))
				}
			}
		}
	}
}

// TestScanWrapsEveryLength: ScanReduceU32/ScanDownsweepU32 wrap mod 2^32 on
// both paths for every valid count 0..300 and a few larger.
func TestScanWrapsEveryLength(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	for _, fast := range []bool{false, streamHasAsm} {
		streamFast = fast
		for _, total := range []int{ScanBlock, 2 * ScanBlock} {
			items := total / ScanBlock
			x := make([]uint32, total)
			for i := range x {
				x[i] = 0xFFFFFFF0 + uint32(i%31)
			}
			for valid := 0; valid <= min(total, 300); valid++ {
				out := make([]uint32, items)
				var d sched.TaskData
				d.Elements = uint32(items)
				d.Params[0] = uint32(valid)
				d.In[0] = sched.StreamOf(x)
				d.Out[0] = sched.StreamOf(out)
				if err := runDirect(t, ScanReduceU32, &d, 0, uint32(items)); err != nil {
					t.Fatal(err)
				}
				n := valid
				if n == 0 {
					n = total
				}
				for b := range items {
					var s uint32
					for i := b * ScanBlock; i < min(n, (b+1)*ScanBlock); i++ {
						s += x[i]
					}
					if out[b] != s {
						t.Fatalf("fast %v valid %d block %d: %#x want %#x", fast, valid, b, out[b], s)
					}
				}
				offs := []uint32{0xFFFFFFFF, 0x80000000}[:items]
				sc := make([]uint32, total)
				d.In[0] = sched.StreamOf(offs)
				d.In[1] = sched.StreamOf(x)
				d.Out[0] = sched.StreamOf(sc)
				if err := runDirect(t, ScanDownsweepU32, &d, 0, uint32(items)); err != nil {
					t.Fatal(err)
				}
				for b := range items {
					acc := offs[b]
					for k := range ScanBlock {
						i := b*ScanBlock + k
						if sc[i] != acc {
							t.Fatalf("fast %v valid %d index %d: %#x want %#x", fast, valid, i, sc[i], acc)
						}
						if i < n {
							acc += x[i]
						}
					}
				}
			}
		}
	}
}

// TestSaxpyInPlace: out may be x or y itself (documented); both paths
// compute a*x+y of the values before the call.
func TestSaxpyInPlace(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	for _, fast := range []bool{false, streamHasAsm} {
		streamFast = fast
		for n := 1; n <= 300; n++ {
			for _, which := range []int{0, 1} {
				x, y := make([]float32, n), make([]float32, n)
				for i := range x {
					x[i], y[i] = float32(i)*0.5, float32(n-i)
				}
				want := saxpyRef(-3, x, y)
				out := [][]float32{x, y}[which]
				if err := runSaxpy(t, -3, x, y, out); err != nil {
					t.Fatalf("n %d in place over input %d: %v", n, which, err)
				}
				for i := range want {
					if out[i] != want[i] {
						t.Fatalf("fast %v n %d in place over input %d: out[%d] = %v, want %v", fast, n, which, i, out[i], want[i])
					}
				}
			}
		}
	}
}

// TestReduceOutputOverlappingInputRefused: a Reduce or Expand kernel's
// output inside its input would be read after being written by another
// block (or another range running at the same time): refused, naming the
// streams, for every kernel with an input and an output of plain words.
func TestReduceOutputOverlappingInputRefused(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	for _, fast := range []bool{false, streamHasAsm} {
		streamFast = fast
		for _, off := range []int{0, 1, 255, 256, 300, 511} {
			x := make([]float32, 4*SumFactor)
			for i := range x {
				x[i] = 1
			}
			out := x[off : off+4]
			err := runReduce(t, SumF32, x, out, 0, 0, 4)
			if err == nil {
				t.Errorf("fast %v: SumF32 with its sums at offset %d of its input: nil error, sums %v", fast, off, out)
			} else if !strings.Contains(err.Error(), "output stream 0") || !strings.Contains(err.Error(), "input stream 0") {
				t.Errorf("SumF32 overlap at %d: error %q does not name the streams", off, err)
			}
		}
	}
}

// TestEverySplitMatchesWhole: every stream kernel run as [0, b) then
// [b, n), for every b, writes the bits of one run over [0, n), on both CPU
// paths (the assembly's block partition does not depend on the split).
func TestEverySplitMatchesWhole(t *testing.T) {
	defer func(f bool) { streamFast = f }(streamFast)
	for _, fast := range []bool{false, streamHasAsm} {
		streamFast = fast
		for _, id := range []sched.KernelID{SumF32, MinMaxF32, Avg32F32, ExpandLerp, ScanReduceU32, ScanDownsweepU32, CRC32CBlocks, Saxpy, SkinLBS, SkinDQS, LocalToModel, LocalToModelSkin} {
			for _, n := range []int{1, 2, 3, 17, 40} {
				d := fixture(t, id, n)
				if err := runDirect(t, id, &d, 0, uint32(n)); err != nil {
					t.Fatal(err)
				}
				want := outputs(&d)
				for b := 0; b <= n; b++ {
					clearOutputs(&d)
					if err := runDirect(t, id, &d, 0, uint32(b)); err != nil {
						t.Fatal(err)
					}
					if err := runDirect(t, id, &d, uint32(b), uint32(n)); err != nil {
						t.Fatal(err)
					}
					got := outputs(&d)
					for o := range want {
						if string(got[o]) != string(want[o]) {
							t.Fatalf("fast %v kernel %d n %d split at %d: output %d differs from one run", fast, id, n, b, o)
						}
					}
				}
			}
		}
	}
}

// TestDirectCallsRefuseSharedOutputs: ToModelSkin with the model and
// palette in one slice (a user who wants only the palette) and the other
// direct calls with an output over an input fail, naming both, instead of
// writing wrong matrices.
func TestDirectCallsRefuseSharedOutputs(t *testing.T) {
	r := rng(5)
	const B = 20
	parents := randParents(r, B)
	local := randLocal(r, B)
	ib := randRigidPalette(r, B)
	same := make([]Mat4, B)
	want := func(err error, names ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("nil error; want one naming %v", names)
		}
		for _, n := range names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("error %q does not name %q", err, n)
			}
		}
	}
	want(ToModelSkin(parents, local, ib, same, same), "model", "palette")
	two := make([]Mat4, 2*B)
	want(ToModelSkin(parents, local, ib, two[:B], two[B-1:2*B-1]), "model", "palette")
	want(ToModelSkin(parents, local, ib, same, ib), "inverseBind", "palette")
	flat := make([]float32, B*16)
	want(ToModel(parents, TransformsOf(flat), Mat4sOf(flat)), "local", "model")
	want(ToModelGo(parents, TransformsOf(flat), Mat4sOf(flat)), "local", "model")

	verts := randSkinVertices(r, 64, B)
	pal := randRigidPalette(r, B)
	vb := unsafe.Slice((*SkinnedVertex)(unsafe.Pointer(&verts[0])), 64)
	want(LBS(verts, pal, vb), "verts", "out")
	pb := unsafe.Slice((*SkinnedVertex)(unsafe.Pointer(&pal[0])), B*64/24)
	want(LBS(verts[:B*64/24], pal, pb), "palette", "out")
	dq := randDQPalette(r, B)
	qb := unsafe.Slice((*SkinnedVertex)(unsafe.Pointer(&dq[0])), B*32/24)
	want(DQS(verts[:B*32/24], dq, qb), "palette", "out")

	// Separate slices still work and allocate nothing.
	model, palette := make([]Mat4, B), make([]Mat4, B)
	out := make([]SkinnedVertex, 64)
	if a := testing.AllocsPerRun(20, func() {
		if err := ToModelSkin(parents, local, ib, model, palette); err != nil {
			t.Fatal(err)
		}
		if err := LBS(verts, pal, out); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("ToModelSkin + LBS: %v allocations per run", a)
	}
}

// TestLocalToModelSkinSharedOutputsRefused: the kernel's model and skin
// streams over the same memory fail the task instead of writing palettes
// where the children read their parents' model matrices.
func TestLocalToModelSkinSharedOutputsRefused(t *testing.T) {
	d := fixture(t, LocalToModelSkin, 5)
	d.Out[1] = d.Out[0]
	err := runDirect(t, LocalToModelSkin, &d, 0, 5)
	if err == nil || !strings.Contains(err.Error(), "output stream 0") || !strings.Contains(err.Error(), "output stream 1") {
		t.Fatalf("model and skin streams shared: error %v, want one naming output streams 0 and 1", err)
	}
}

// TestLargeShapesBothPaths: Saxpy and ExpandLerp at 2^16-1, 2^16+1 and
// 2^20+3 items, the reduce and scan kernels at 2^16+1 inputs (257 items,
// the last one partial), give the same bits on the Go loops and the
// assembly (MinMax equal values; the sums within their tolerance).
func TestLargeShapesBothPaths(t *testing.T) {
	if !streamHasAsm {
		t.Skip("no AVX2")
	}
	defer func(f bool) { streamFast = f }(streamFast)
	type shape struct {
		id    sched.KernelID
		n     int
		valid uint32
	}
	var shapes []shape
	for _, n := range []int{1<<16 - 1, 1<<16 + 1, 1<<20 + 3} {
		shapes = append(shapes, shape{Saxpy, n, 0}, shape{ExpandLerp, n, 0})
	}
	for _, id := range []sched.KernelID{SumF32, MinMaxF32, ScanReduceU32, ScanDownsweepU32} {
		shapes = append(shapes, shape{id, 257, 1<<16 + 1})
	}
	shapes = append(shapes, shape{Avg32F32, 2049, 1<<16 + 1})
	for _, sh := range shapes {
		d := streamData(t, sh.id, sh.n, uint64(sh.n))
		d.Params[0] = sh.valid
		if sh.id == Saxpy {
			d.Params[0] = math.Float32bits(0.75)
		}
		for _, r := range [][2]uint32{{0, uint32(sh.n)}, {1, uint32(sh.n) - 1}} {
			streamFast = false
			clearOutputs(&d)
			if err := runDirect(t, sh.id, &d, r[0], r[1]); err != nil {
				t.Fatal(err)
			}
			want := outputs(&d)
			streamFast = true
			clearOutputs(&d)
			if err := runDirect(t, sh.id, &d, r[0], r[1]); err != nil {
				t.Fatal(err)
			}
			compareStream(t, sh.id, &d, outputs(&d)[0], want[0], sh.n, r)
		}
	}
}

// TestCRC32CEveryValidLength: CRC32CBlocks with every valid byte count
// 1..300 and around the block edges, split at every block, combined by
// CRC32COfBlocks, equals hash/crc32 over the bytes.
func TestCRC32CEveryValidLength(t *testing.T) {
	const items = 3
	words := randWords(rng(77), items*CRCBlockWords)
	data := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*4)
	var lens []int
	for n := 1; n <= 300; n++ {
		lens = append(lens, n)
	}
	for _, e := range []int{CRCBlockBytes, 2 * CRCBlockBytes, 3 * CRCBlockBytes} {
		lens = append(lens, e-3, e-1, e, e+1, e+4)
	}
	for _, n := range lens {
		if n > len(data) {
			continue
		}
		out := make([]uint32, items)
		var d sched.TaskData
		d.Elements = items
		d.Params[0] = uint32(n)
		d.In[0] = sched.StreamOf(words)
		d.Out[0] = sched.StreamOf(out)
		for b := uint32(0); b < items; b++ {
			if err := runDirect(t, CRC32CBlocks, &d, b, b+1); err != nil {
				t.Fatal(err)
			}
		}
		want := crc32.Checksum(data[:n], crc32.MakeTable(crc32.Castagnoli))
		if got := CRC32COfBlocks(out, int64(n)); got != want {
			t.Fatalf("%d bytes: CRC32COfBlocks %#x, hash/crc32 %#x", n, got, want)
		}
	}
}

// TestMisalignedStreamsRefused: float streams over bytes at offsets 1..3
// (sub-slices of a []byte) fail with an error naming the alignment, on
// every stream of every word kernel, never panic.
func TestMisalignedStreamsRefused(t *testing.T) {
	for _, id := range []sched.KernelID{SumF32, MinMaxF32, Avg32F32, ExpandLerp, ScanReduceU32, ScanDownsweepU32, CRC32CBlocks, Saxpy} {
		for off := 1; off < 8; off++ {
			for s := 0; s < 3; s++ {
				d := fixture(t, id, 3)
				st := &d.In[s]
				if s == 2 {
					st = &d.Out[0]
				}
				if st.Bytes == nil {
					continue
				}
				buf := make([]byte, len(st.Bytes)+8)
				st.Bytes = buf[off : off+len(st.Bytes)]
				err := runDirect(t, id, &d, 0, 3)
				if off%4 == 0 {
					continue // aligned again (and maybe misaligned for 8-byte elements: either is fine)
				}
				if err == nil || !strings.Contains(err.Error(), "aligned") {
					t.Errorf("kernel %d stream %d at byte offset %d: error %v, want one naming the alignment", id, s, off, err)
				}
			}
		}
	}
}
