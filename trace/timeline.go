package trace

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"sort"

	"github.com/vkjobs/vkjobs/sched"
)

// palette holds the timeline's kernel colours, in the order they are
// given to the kernels of a frame (sorted by ID): Tableau 10 without its
// grey, then colours from Kenneth Kelly's list of maximum contrast
// ("Twenty-two colors of maximum contrast", Color Engineering, 1965), less
// white, black, grey (the timeline's own scope, failure and background
// colours) and those too close to an earlier entry. Any two differ by at
// least 90 in the "redmean" RGB distance (TestTimelineColoursDistinct).
// A frame with more kernels than entries gets further colours from
// kernelColour's golden-angle hues: distinct, if less far apart.
var palette = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
	"#875692", "#a1caf1", "#be0032", "#c2b280", "#008856", "#0067a5", "#8db600", "#882d17", "#dcd300", "#2b3d26",
}

// kernelColour is the colour of the i-th kernel (0-based) of a frame.
func kernelColour(i int) string {
	if i < len(palette) {
		return palette[i]
	}
	// HSL with the hue stepped by the golden angle, lightness alternating.
	k := i - len(palette)
	h := math.Mod(float64(k)*137.508+20, 360)
	l := 0.42 + 0.16*float64(k%2)
	sat := 0.65
	c := (1 - math.Abs(2*l-1)) * sat
	hp := h / 60
	x := c * (1 - math.Abs(math.Mod(hp, 2)-1))
	var r, g, b float64
	switch int(hp) {
	case 0:
		r, g = c, x
	case 1:
		r, g = x, c
	case 2:
		g, b = c, x
	case 3:
		g, b = x, c
	case 4:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	to := func(v float64) int { return int(math.Round((v + m) * 255)) }
	return fmt.Sprintf("#%02x%02x%02x", to(r), to(g), to(b))
}

// textOn returns the label colour readable on the fill colour (#rrggbb):
// black on light fills, white on dark ones (relative luminance, ITU-R BT.709).
func textOn(fill string) string {
	var r, g, b int
	fmt.Sscanf(fill, "#%02x%02x%02x", &r, &g, &b)
	if 0.2126*float64(r)+0.7152*float64(g)+0.0722*float64(b) > 150 {
		return "black"
	}
	return "white"
}

// legendCharWidth bounds the width of one character of the 11-pixel
// sans-serif legend text (the widest common glyphs, "m" and "w", are
// about 9 px; names are mostly lower case and punctuation).
const legendCharWidth = 7

// FrameSpan returns the start and end (sched.Nanotime) of frame n: from its
// marker to the next frame's marker, or to the last event if it is the last.
// When frame number n was marked more than once (a second run recorded
// without Reset, a counter that wraps), the latest marker counts. ok is
// false when n was never marked or nothing ends after its marker.
func (r *Recorder) FrameSpan(n int) (start, end int64, ok bool) {
	start, end, found := r.frameSpan(n)
	if !found || end <= start {
		return 0, 0, false
	}
	return start, end, true
}

// frameSpan is FrameSpan, with found telling a frame that was never marked
// from one marked with nothing after it (end <= start).
func (r *Recorder) frameSpan(n int) (start, end int64, found bool) {
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
			// A later marker of the same number starts the frame
			// again: its end is the marker after this one.
			start, end = e.Start, -1
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
	return start, end, true
}

// WriteTimelineSVG draws frame n as an SVG picture: one row per thread and
// device, tasks as bars coloured by kernel (each kernel of the frame its own
// colour), a time axis in milliseconds, and a legend of the kernels wrapped
// into as many lines as the picture's width needs. The bars of an Auto
// task with a recorded Decision are outlined in black, labelled above with
// the device chosen, and their tooltip gives the decision: the reason, the
// predicted time per device and the measured time.
func (r *Recorder) WriteTimelineSVG(w io.Writer, n int) error {
	t0, t1, found := r.frameSpan(n)
	if !found {
		return fmt.Errorf("trace: no frame %d recorded", n)
	}
	if t1 <= t0 {
		return fmt.Errorf("trace: frame %d is empty: nothing ends after its marker", n)
	}
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
		left    = 110
		width   = 1200
		right   = 20
		rowH    = 28
		top     = 40
		axisH   = 30
		legendH = 18
	)
	span := float64(t1 - t0)
	x := func(t int64) float64 { return left + float64(t-t0)/span*width }
	rowOf := map[int]int{}
	for i, rw := range rows {
		rowOf[rw.tid] = i
	}

	// The frame's events, and its kernels in ID order with their colours.
	var evs []Event
	colour := map[sched.KernelID]string{}
	var ids []int
	for _, e := range r.Events() {
		if e.Kind == KindFrame || e.Stop < t0 || e.Start > t1 {
			continue
		}
		if _, ok := rowOf[r.tid(&e)]; !ok {
			continue
		}
		evs = append(evs, e)
		if e.Kind == KindTask {
			if _, ok := colour[e.Kernel]; !ok {
				colour[e.Kernel] = ""
				ids = append(ids, int(e.Kernel))
			}
		}
	}
	sort.Ints(ids)
	for i, id := range ids {
		colour[sched.KernelID(id)] = kernelColour(i)
	}

	// Legend layout: entries left to right, a new line when the next
	// would pass the right edge of the time area.
	type entry struct {
		name string
		x, y int
		fill string
	}
	ya := top + len(rows)*rowH + 15 // axis labels' baseline
	var legend []entry
	lx, line := left, 0
	for _, id := range ids {
		name := r.kernelName(sched.KernelID(id))
		wd := 14 + legendCharWidth*len([]rune(name)) + 16
		if lx > left && lx+wd > left+width {
			lx, line = left, line+1
		}
		legend = append(legend, entry{name, lx, ya + 14 + line*legendH, colour[sched.KernelID(id)]})
		lx += wd
	}
	h := ya + axisH
	if len(legend) > 0 {
		h = legend[len(legend)-1].y + legendH + 10
	}

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", left+width+right, h)
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
	dix := newDecisionIndex(r.Decisions())
	// Longest first, so that nested scopes (a Wait inside a kernel) are
	// drawn on top of the scopes that contain them.
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Stop-evs[i].Start > evs[j].Stop-evs[j].Start })
	for i := range evs {
		e := &evs[i]
		ri := rowOf[r.tid(e)]
		x0, x1 := x(max(e.Start, t0)), x(min(e.Stop, t1))
		if x1-x0 < 0.5 {
			x1 = x0 + 0.5
		}
		y := top + ri*rowH + 3
		fill := "#888888"
		name := e.Label
		if e.Kind == KindTask {
			fill = colour[e.Kernel]
			name = r.kernelName(e.Kernel)
		}
		if e.Failed {
			fill = "#000000"
		}
		stroke, sw, extra := "white", 0.3, ""
		d := dix.of(e)
		if d != nil {
			// An Auto task: outlined, its decision in the tooltip.
			stroke, sw, extra = "#000000", 1.2, "\n"+d.text()
		}
		fmt.Fprintf(bw, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" stroke="%s" stroke-width="%.1f"><title>%s %s [%d,%d) %.1f µs%s</title></rect>`+"\n",
			x0, y, x1-x0, rowH-6, fill, stroke, sw, html.EscapeString(name), e.Task, e.Begin, e.End, float64(e.Stop-e.Start)/1e3, html.EscapeString(extra))
		if d != nil {
			// Above the bar: the device chosen.
			fmt.Fprintf(bw, `<text x="%.2f" y="%d" font-size="8" class="auto">%s</text>`+"\n", x0, y-1, html.EscapeString(d.Device))
		}
		if x1-x0 > 60 {
			fmt.Fprintf(bw, `<text x="%.2f" y="%d" fill="%s">%s</text>`+"\n", x0+3, y+rowH/2+1, textOn(fill), html.EscapeString(name))
		}
	}
	// Axis.
	for k := 0; k <= 10; k++ {
		t := t0 + int64(float64(k)/10*span)
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>`, x(t), top, x(t), ya-10)
		fmt.Fprintf(bw, `<text x="%.1f" y="%d" text-anchor="middle">%.2f ms</text>`+"\n", x(t), ya, float64(t-t0)/1e6)
	}
	for _, e := range legend {
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			e.x, e.y, e.fill, e.x+14, e.y+9, html.EscapeString(e.name))
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}
