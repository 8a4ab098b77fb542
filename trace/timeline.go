package trace

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"sort"

	"github.com/vkjobs/vkjobs/sched"
)

// palette colours kernels (by ID) in the timeline.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// FrameSpan returns the start and end (sched.Nanotime) of frame n: from its
// marker to the next frame's marker, or to the last event if it is the last.
func (r *Recorder) FrameSpan(n int) (start, end int64, ok bool) {
	evs := r.Events()
	start, end = -1, -1
	var lastStop int64
	for i := range evs {
		e := &evs[i]
		if e.Stop > lastStop {
			lastStop = e.Stop
		}
		if e.Kind != KindFrame {
			continue
		}
		if e.Frame == n {
			start = e.Start
		} else if start >= 0 && end < 0 && e.Start > start {
			end = e.Start
		}
	}
	if start < 0 {
		return 0, 0, false
	}
	if end < 0 {
		end = lastStop
	}
	return start, end, end > start
}

// WriteTimelineSVG draws frame n as an SVG picture: one row per thread and
// device, tasks as bars coloured by kernel, a time axis in milliseconds.
func (r *Recorder) WriteTimelineSVG(w io.Writer, n int) error {
	t0, t1, ok := r.FrameSpan(n)
	if !ok {
		return fmt.Errorf("trace: no frame %d recorded", n)
	}
	evs := r.Events()
	type row struct {
		name string
		tid  int
	}
	var rows []row
	for i := range r.threads {
		rows = append(rows, row{r.threads[i].name, i})
	}
	rows = append(rows, row{"GPU", len(r.threads)}, row{"SPU", len(r.threads) + 1})
	const (
		left   = 110
		width  = 1200
		rowH   = 28
		top    = 40
		bottom = 60
	)
	span := float64(t1 - t0)
	x := func(t int64) float64 { return left + float64(t-t0)/span*width }
	rowOf := map[int]int{}
	for i, rw := range rows {
		rowOf[rw.tid] = i
	}
	h := top + len(rows)*rowH + bottom
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", left+width+20, h)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="20" font-size="14">frame %d: %.3f ms</text>`+"\n", left, n, span/1e6)
	for i, rw := range rows {
		y := top + i*rowH
		fill := "#f4f4f4"
		if i%2 == 1 {
			fill = "#ffffff"
		}
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y, width, rowH, fill)
		fmt.Fprintf(bw, `<text x="5" y="%d">%s</text>`+"\n", y+rowH/2+4, html.EscapeString(rw.name))
	}
	// Nested scopes (a Wait inside a kernel) are drawn thinner on top.
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Stop-evs[i].Start > evs[j].Stop-evs[j].Start })
	legend := map[sched.KernelID]bool{}
	for i := range evs {
		e := &evs[i]
		if e.Kind == KindFrame || e.Stop < t0 || e.Start > t1 {
			continue
		}
		ri, ok := rowOf[r.tid(e)]
		if !ok {
			continue
		}
		x0, x1 := x(max(e.Start, t0)), x(min(e.Stop, t1))
		if x1-x0 < 0.5 {
			x1 = x0 + 0.5
		}
		y := top + ri*rowH + 3
		colour := "#888888"
		name := e.Label
		if e.Kind == KindTask {
			colour = palette[int(e.Kernel)%len(palette)]
			name = r.kernelName(e.Kernel)
			legend[e.Kernel] = true
		}
		if e.Failed {
			colour = "#000000"
		}
		fmt.Fprintf(bw, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" stroke="white" stroke-width="0.3"><title>%s %s [%d,%d) %.1f µs</title></rect>`+"\n",
			x0, y, x1-x0, rowH-6, colour, html.EscapeString(name), e.Task, e.Begin, e.End, float64(e.Stop-e.Start)/1e3)
		if x1-x0 > 60 {
			fmt.Fprintf(bw, `<text x="%.2f" y="%d" fill="white">%s</text>`+"\n", x0+3, y+rowH/2+1, html.EscapeString(name))
		}
	}
	// Axis.
	ya := top + len(rows)*rowH + 15
	for k := 0; k <= 10; k++ {
		t := t0 + int64(float64(k)/10*span)
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`, x(t), top, x(t), ya-10)
		fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">%.2f ms</text>`+"\n", x(t), ya, float64(t-t0)/1e6)
	}
	// Legend.
	ids := make([]int, 0, len(legend))
	for id := range legend {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	lx := left
	for _, id := range ids {
		name := r.kernelName(sched.KernelID(id))
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, ya+14, palette[id%len(palette)], lx+14, ya+23, html.EscapeString(name))
		lx += 30 + 7*len(name)
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}
