package render

import (
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkjobs/vkjobs/evstream"
)

// benchScene is a crowd-like frame: nctx gather jobs, perCtx draws each,
// 2 layers, 16 pipelines, 10% translucent, continuous depths.
func benchScene(b *testing.B, nctx, perCtx int) *scene {
	sc := newScene(b, nctx, perCtx*DrawRecordSize)
	for range 4 {
		p, err := sc.reg.AddPipeline(Pipeline{})
		must(b, err)
		sc.pipes = append(sc.pipes, p)
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for _, c := range sc.ctxs {
		for range perCtx {
			d := sc.draw(rng)
			k := Key{
				Layer:       uint8(rng.IntN(2)),
				Translucent: rng.IntN(10) == 0,
				Pipeline:    uint16(d.Pipeline),
				Depth:       QuantizeDepth(rng.Float32() * 100),
			}
			var err error
			d.Key, err = k.Encode()
			must(b, err)
			must(b, c.Draw(&d))
		}
	}
	return sc
}

// BenchmarkMergeSort: 100k packets from 8 contexts. "merge-n-sort" is
// MergeSort on the scheduler (parse and validate per context, then the
// parallel radix passes); "merge-n-sort-1thread" runs the same steps on the
// calling goroutine; "SortStableFunc" sorts the concatenated items that the parse
// would produce (pre-extracted, so it does strictly less work) with
// slices.SortStableFunc.
func BenchmarkMergeSort(b *testing.B) {
	const nctx, per = 8, 100000 / 8
	sc := benchScene(b, nctx, per)
	s, m := newSched(b, 0)
	for _, serial := range []bool{false, true} {
		name := "merge-n-sort"
		if serial {
			name += "-1thread"
		}
		b.Run(name, func(b *testing.B) {
			r := newRenderer(b, s, Config{})
			r.serial = serial
			_, err := r.MergeSort(m, sc.ctxs, sc.reg) // grow the scratch
			must(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.MergeSort(m, sc.ctxs, sc.reg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nctx*per), "ns/packet")
		})
	}
	b.Run("SortStableFunc", func(b *testing.B) {
		var all []ref
		for i, c := range sc.ctxs {
			rd := evstream.NewReader(c.Bytes())
			for rd.Next() {
				all = append(all, ref{SortKey(binary.NativeEndian.Uint64(rd.Payload())), i, rd.PayloadOffset()})
			}
		}
		buf := make([]ref, len(all))
		b.ReportAllocs()
		for b.Loop() {
			copy(buf, all)
			slices.SortStableFunc(buf, func(a, b ref) int { return cmp.Compare(a.key, b.key) })
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nctx*per), "ns/packet")
	})
}

// BenchmarkRecord: recording 100k sorted draws through the CommandRecorder
// (an MVP multiply and a command encode per draw), in one range on one
// thread ("serial"), one range per scheduler thread ("parallel-1x") or the
// default four per thread ("parallel").
func BenchmarkRecord(b *testing.B) {
	const nctx, per = 8, 100000 / 8
	sc := benchScene(b, nctx, per)
	s, m := newSched(b, 0)
	for _, mode := range []struct {
		name   string
		ranges int
	}{{"serial", 1}, {"parallel-1x", s.Threads()}, {"parallel", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			r := newRenderer(b, s, Config{Ranges: mode.ranges})
			sorted, err := r.MergeSort(m, sc.ctxs, sc.reg)
			must(b, err)
			rec := &CommandRecorder{}
			for i := range 16 {
				rec.ViewProj[i] = float32(i)
			}
			_, err = r.Record(m, sorted, rec) // grow the command lists
			must(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Record(m, sorted, rec); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sorted.Len()), "ns/draw")
		})
	}
}
