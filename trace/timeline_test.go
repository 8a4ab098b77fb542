package trace

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/vkjobs/vkjobs/sched"
)

// crowdKernels are the kernel names of a crowd frame (cmd/crowd), the
// longest names included, and a few more to pass the palette's length.
var crowdKernels = []string{
	"anim_sample", "local_to_model_skin", "skin_lbs", "skin_lbs_uniform", "skin_lbs.spu",
	"crowd.clock", "crowd.procedural", "crowd.events", "crowd.gather", "crowd.merge-sort",
	"crowd.record", "crowd.submit-present", "crowd.mark", "render.record", "render.sort",
	"reduce_sum", "prefix_scan", "checksum", "saxpy", "a_kernel_with_a_rather_long_name",
	"x", "yy",
}

// timelineOf records one frame in which each of k kernels runs once, on
// two threads and the GPU, and returns its SVG.
func timelineOf(t *testing.T, k int) []byte {
	t.Helper()
	rec := New(2, 256)
	rec.SetKernelNames(func(id sched.KernelID) string { return crowdKernels[int(id)-1] })
	rec.Frame(0)
	base := sched.Nanotime() + 1000
	for i := range k {
		ev := sched.RunEvent{Thread: i % 3, Where: sched.AnyWorker, Kernel: sched.KernelID(i + 1), Task: sched.TaskID(i + 1),
			Start: base + int64(i)*10000, Stop: base + int64(i)*10000 + 9000}
		if ev.Thread == 2 {
			ev.Thread, ev.Where = -1, sched.GPU
		}
		rec.TaskRan(&ev)
	}
	var buf bytes.Buffer
	if err := rec.WriteTimelineSVG(&buf, 0); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type svgDoc struct {
	Width  string  `xml:"width,attr"`
	Height string  `xml:"height,attr"`
	Rects  []svgEl `xml:"rect"`
	Texts  []svgEl `xml:"text"`
}

type svgEl struct {
	X      string `xml:"x,attr"`
	Y      string `xml:"y,attr"`
	Width  string `xml:"width,attr"`
	Fill   string `xml:"fill,attr"`
	Title  string `xml:"title"`
	Anchor string `xml:"text-anchor,attr"`
	Text   string `xml:",chardata"`
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("attribute %q: %v", s, err)
	}
	return v
}

// TestTimelineColoursAndLegend: every kernel of the frame has its own
// colour on its bars and its legend entry, and the legend, however many
// kernels, lies inside the picture.
func TestTimelineColoursAndLegend(t *testing.T) {
	for _, k := range []int{3, 14, len(palette), len(crowdKernels)} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			var doc svgDoc
			if err := xml.Unmarshal(timelineOf(t, k), &doc); err != nil {
				t.Fatalf("the timeline is not XML: %v", err)
			}
			w, h := num(t, doc.Width), num(t, doc.Height)
			// Bars: one colour per kernel, told apart by their titles.
			barColour := map[string]string{}
			for _, r := range doc.Rects {
				if r.Title == "" {
					continue
				}
				var name string
				fmt.Sscan(r.Title, &name)
				if c, ok := barColour[name]; ok && c != r.Fill {
					t.Errorf("kernel %s drawn in %s and %s", name, c, r.Fill)
				}
				barColour[name] = r.Fill
			}
			if len(barColour) != k {
				t.Fatalf("%d kernels drawn, want %d", len(barColour), k)
			}
			kernelOf := map[string]string{}
			for name, c := range barColour {
				if other, ok := kernelOf[c]; ok {
					t.Errorf("kernels %s and %s share the colour %s", name, other, c)
				}
				kernelOf[c] = name
			}
			// Legend: a swatch (a 10-pixel rect) followed by its name.
			legend := 0
			for _, tx := range doc.Texts {
				if _, ok := barColour[tx.Text]; !ok || tx.Anchor != "" {
					continue
				}
				if num(t, tx.X) < 100 { // a bar's label, not the legend's
					continue
				}
				legend++
				right := num(t, tx.X) + legendCharWidth*float64(len(tx.Text))
				if right > w || num(t, tx.Y) > h-4 {
					t.Errorf("legend entry %s ends at x=%.0f, y=%s in a %.0fx%.0f picture", tx.Text, right, tx.Y, w, h)
				}
			}
			swatches := 0
			for _, r := range doc.Rects {
				if r.Width == "10" {
					swatches++
					if _, ok := kernelOf[r.Fill]; !ok {
						t.Errorf("legend swatch %s matches no kernel's bars", r.Fill)
					}
				}
			}
			if legend < k || swatches != k {
				t.Errorf("legend: %d names and %d swatches for %d kernels", legend, swatches, k)
			}
		})
	}
}

// TestTimelineColoursDistinct: the palette's colours are far apart (the
// "redmean" weighted RGB distance, at least 90), and the colours past it
// are distinct from it and from each other.
func TestTimelineColoursDistinct(t *testing.T) {
	rgb := func(c string) (r, g, b float64) {
		var x, y, z int
		if n, _ := fmt.Sscanf(c, "#%02x%02x%02x", &x, &y, &z); n != 3 {
			t.Fatalf("colour %q", c)
		}
		return float64(x), float64(y), float64(z)
	}
	dist := func(a, b string) float64 {
		r1, g1, b1 := rgb(a)
		r2, g2, b2 := rgb(b)
		rm := (r1 + r2) / 2
		return math.Sqrt((2+rm/256)*(r1-r2)*(r1-r2) + 4*(g1-g2)*(g1-g2) + (2+(255-rm)/256)*(b1-b2)*(b1-b2))
	}
	for i := range palette {
		for j := range i {
			if d := dist(palette[i], palette[j]); d < 90 {
				t.Errorf("palette %d (%s) and %d (%s) are %.0f apart", i, palette[i], j, palette[j], d)
			}
		}
	}
	seen := map[string]int{}
	for i := range 64 {
		c := kernelColour(i)
		if j, ok := seen[c]; ok {
			t.Errorf("kernels %d and %d both get %s", i, j, c)
		}
		seen[c] = i
		if d := dist(c, "#ffffff"); d < 60 {
			t.Errorf("kernel %d's colour %s is near the white background", i, c)
		}
	}
}
