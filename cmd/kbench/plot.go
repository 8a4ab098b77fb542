package main

import (
	"fmt"
	"github.com/vkjobs/vkjobs/internal/outfile"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vkjobs/vkjobs/sched"
)

// plotFormat returns the image format of a -plot file name, or an error
// for an extension kbench does not write.
func plotFormat(file string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(file)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("-plot %q: the file name must end in .svg or .png", file)
	}
}

// Line styles per device, fixed so that every panel reads the same way.
var deviceStyle = map[string]struct {
	color color.Color
	shape draw.GlyphDrawer
	dash  []vg.Length
}{
	devCPU1:     {color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, draw.CircleGlyph{}, nil},
	devCPUAll:   {color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}, draw.SquareGlyph{}, nil},
	devSPU:      {color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 255}, draw.RingGlyph{}, nil},
	devGPU:      {color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}, draw.TriangleGlyph{}, nil},
	devGPUXfer:  {color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 255}, draw.PyramidGlyph{}, nil},
	devCopyName: {color.Gray{Y: 0x70}, draw.CrossGlyph{}, []vg.Length{vg.Points(4), vg.Points(3)}},
	devBound1:   {color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}, draw.PlusGlyph{}, []vg.Length{vg.Points(2), vg.Points(2)}},
}

// devBound1 is the plot's line of the one-core bound (cpu-1's and spu's).
const devBound1 = "bound, 1 core"

// writePlot draws, per kernel, throughput (elements per second) against
// size on log-log axes, one line per device plus the memory-copy bound
// (the elements per second a plain copy of the same bytes allows) and the
// one-core bound (the slower of copy and compute on one core), in a grid
// of panels, to file (.svg or .png). The legend gives each CPU column's
// fraction of its bound at the largest size.
func (r *Report) writePlot(file string) error {
	format, err := plotFormat(file)
	if err != nil {
		return err
	}
	cols := min(3, len(r.Kernels))
	rows := (len(r.Kernels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, k := range r.Kernels {
		p, err := r.kernelPlot(k)
		if err != nil {
			return err
		}
		plots[i/cols][i%cols] = p
	}
	const panelW, panelH = 4 * vg.Inch, 3.2 * vg.Inch
	c, err := draw.NewFormattedCanvas(panelW*vg.Length(cols), panelH*vg.Length(rows), format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots {
		for i, p := range plots[j] {
			if p != nil {
				p.Draw(canvases[j][i])
			}
		}
	}
	return outfile.Write(file, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// kernelPlot is one kernel's panel.
func (r *Report) kernelPlot(k string) (*plot.Plot, error) {
	p := plot.New()
	elems := "elements"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = decades{}, decades{}
	p.Legend.Top, p.Legend.Left = false, false // bottom right, below the lines (see Y.Min)
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	lines := append(append([]string(nil), r.Devices...), devCopyName, devBound1)
	largest := 0
	for _, s := range r.Sizes {
		largest = max(largest, s)
	}
	for _, d := range lines {
		var xys plotter.XYs
		for _, s := range r.Sizes {
			var x *Result
			if d == devBound1 {
				if c, x1 := r.copyOf(k, s), r.result(k, s, devCPU1); c != nil && len(c.Bounds) > 0 && c.Bounds[0].Seconds > 0 && x1 != nil {
					xys = append(xys, plotter.XY{X: float64(x1.Elements), Y: float64(x1.Elements) / c.Bounds[0].Seconds})
				}
				continue
			}
			if d == devCopyName {
				for _, dd := range r.Devices {
					if x = r.result(k, s, dd); x != nil {
						break
					}
				}
				if x != nil {
					xys = append(xys, plotter.XY{X: float64(x.Elements), Y: float64(x.Elements) / x.CopySeconds})
				}
				continue
			}
			if x = r.result(k, s, d); x != nil {
				elems = infoOf(sched.KernelID(x.ID)).elems
				xys = append(xys, plotter.XY{X: float64(x.Elements), Y: x.ElemPerSec})
			}
		}
		xys = positive(xys)
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		st := deviceStyle[d]
		line.Color, points.Color, points.Shape = st.color, st.color, st.shape
		line.Dashes = st.dash
		name := d
		if d == devCopyName {
			name = "copy bound"
		}
		if x := r.result(k, largest, d); x != nil && x.BoundFraction > 0 {
			name = fmt.Sprintf("%s: %.0f%% of bound at %s", d, 100*x.BoundFraction, formatSize(largest))
		}
		p.Add(line, points)
		p.Legend.Add(name, line, points)
	}
	// A single size (or value) would make a zero-width log range.
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if a.Min == a.Max && a.Min > 0 {
			a.Min, a.Max = a.Min/2, a.Max*2
		}
	}
	// Whole decades on the size axis, so that every panel has labelled
	// ticks (sizes rounded up to whole work items, 1024 for 1e3, would
	// otherwise start the axis after its first label).
	if p.X.Min > 0 && p.X.Max > 0 {
		p.X.Min = math.Pow(10, math.Floor(math.Log10(p.X.Min)+1e-9))
		p.X.Max = math.Pow(10, math.Ceil(math.Log10(p.X.Max)-1e-9))
		if p.X.Min == p.X.Max {
			p.X.Max *= 10
		}
	}
	p.Y.Min /= 1000 // room for the legend below the lowest line
	p.Title.Text = k
	p.X.Label.Text = "size (" + elems + ")"
	p.Y.Label.Text = elems + " per second"
	return p, nil
}

// decades marks a log axis: labelled ticks at powers of ten (1e3, 1e4...),
// unlabelled ones at 2-9 times them.
type decades struct{}

func (decades) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			if v := m * p; v >= lo && v <= hi {
				t := plot.Tick{Value: v}
				if m == 1 {
					t.Label = fmt.Sprintf("1e%d", int(e))
				}
				ticks = append(ticks, t)
			}
		}
	}
	return ticks
}

// positive drops points a log axis cannot show.
func positive(xys plotter.XYs) plotter.XYs {
	out := xys[:0]
	for _, p := range xys {
		if p.X > 0 && p.Y > 0 && !math.IsInf(p.Y, 0) && !math.IsNaN(p.Y) {
			out = append(out, p)
		}
	}
	return out
}
