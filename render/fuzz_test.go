package render

import (
	"errors"
	"testing"

	"github.com/vkjobs/vkjobs/evstream"
)

// FuzzPacketStream loads arbitrary bytes as one context's stream, beside a
// valid context, and runs the whole frame: MergeSort, then Record through
// the validating recorder. Whatever the bytes, nothing may panic, the error
// must be nil or a *FrameError, every packet must be accounted for, the
// output must be sorted and hold only valid handles, and recording must
// pass the CountingRecorder's protocol checks.
func FuzzPacketStream(f *testing.F) {
	s, m := newSched(f, 0)
	r := newRenderer(f, s, Config{MergeGrain: 2, Ranges: 3, MinRange: 1})
	reg := NewRegistry()
	pipe, _ := reg.AddPipeline(Pipeline{Name: "p"})
	mesh, _ := reg.AddMesh(Mesh{Name: "m", Vertices: 8})
	reg.SetInstances(4)
	good, _ := NewContext(1 << 10)
	d := DrawPacket{Key: 3, Pipeline: pipe, Mesh: mesh, VertexCount: 8, InstanceCount: 1}
	must(f, good.Draw(&d))
	must(f, good.SetState(&StatePacket{Key: 2, Kind: StateViewport, Rect: [4]int32{0, 0, 4, 4}}))
	f.Add(newRaw().draw(d).state(StatePacket{Key: 9, Kind: StateScissor}).job(JobPacket{Key: 1}).bytes())
	f.Add(newRaw().draw(d).bytes()[:20])
	bad, _ := NewContext(1 << 16)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > bad.Cap() {
			return
		}
		must(t, bad.Load(data))
		ctxs := []*RenderContext{good, bad}
		sorted, err := r.MergeSort(m, ctxs, reg)
		if sorted == nil {
			t.Fatalf("no sorted stream: %v", err)
		}
		var fe *FrameError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error %v is not a *FrameError", err)
		}
		// Every record of every context is accounted for.
		records, corrupt := 0, 0
		for _, c := range ctxs {
			rd := evstream.NewReader(c.Bytes())
			for rd.Next() {
				records++
			}
			if rd.Err() != nil {
				corrupt++
			}
		}
		st := sorted.Stats()
		if st.Packets != sorted.Len() || st.Draws+st.States+st.Jobs != st.Packets ||
			st.Packets+st.Unknown+st.Invalid != records || st.Corrupt != corrupt {
			t.Fatalf("stats %+v for %d records, %d corrupt", st, records, corrupt)
		}
		if (err != nil) != (st.Invalid+st.Corrupt+st.Overflow > 0) {
			t.Fatalf("err %v with stats %+v", err, st)
		}
		for i := range sorted.Len() {
			if i > 0 && sorted.Key(i-1) > sorted.Key(i) {
				t.Fatalf("packet %d out of order", i)
			}
			if d := sorted.Draw(i); d != nil {
				if bad := (Problem{}); !reg.checkDraw(d, &bad) {
					t.Fatalf("invalid draw %+v passed: %v", *d, bad)
				}
			}
		}
		rec := CountingRecorder{Registry: reg}
		if _, err := r.Record(m, sorted, &rec); err != nil {
			t.Fatal(err)
		}
	})
}
