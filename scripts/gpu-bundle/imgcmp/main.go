// Command imgcmp compares two PNG images of the crowd demo, as the GPU
// bundle's run.sh does with the frames drawn with -offload cpu and gpu:
// both must show a picture (not a blank frame) and agree within the
// tolerance the crowd's own tests use (cmd/crowd's TestHeadlessCPUvsGPU):
// at most 1% of the pixels differ by more than 8 in a colour channel,
// since the CPU and GPU kernels agree to about 2e-5, which moves a few
// edge pixels.
//
// Usage: imgcmp [-tol 8] [-percent 1] A.png B.png
//
// It prints one line saying how many pixels differ. Exit status: 0 within
// the tolerance, 1 outside it (or a blank image), 2 on bad input.
package main

import (
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("imgcmp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tol := fs.Int("tol", 8, "a pixel differs when a colour channel differs by more than this (0..255)")
	percent := fs.Float64("percent", 1, "the most pixels that may differ, in percent")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 || *tol < 0 || *tol > 255 || !(*percent >= 0 && *percent <= 100) {
		fmt.Fprintln(stderr, "usage: imgcmp [-tol 0..255] [-percent 0..100] A.png B.png")
		return 2
	}
	a, err := load(fs.Arg(0))
	if err == nil {
		var b image.Image
		if b, err = load(fs.Arg(1)); err == nil {
			var r result
			if r, err = compare(a, b, *tol); err == nil {
				ok := r.blank == "" && float64(r.bad)*100 <= *percent*float64(r.total)
				verdict := "within the tolerance"
				switch {
				case r.blank != "":
					verdict = r.blank
				case !ok:
					verdict = fmt.Sprintf("OUTSIDE the tolerance (%g%%)", *percent)
				}
				fmt.Fprintf(stdout, "imgcmp: %s vs %s: %d of %d pixels (%.3f%%) differ by more than %d in a channel, largest difference %d: %s\n",
					fs.Arg(0), fs.Arg(1), r.bad, r.total, 100*float64(r.bad)/float64(max(r.total, 1)), *tol, r.maxDiff, verdict)
				if !ok {
					return 1
				}
				return 0
			}
		}
	}
	fmt.Fprintln(stderr, "imgcmp:", err)
	return 2
}

func load(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable PNG: %w", path, err)
	}
	return im, nil
}

type result struct {
	bad, total, maxDiff int
	blank               string // why an image looks blank, or ""
}

// compare counts the pixels of a and b whose colour differs by more than
// tol in a channel, and checks that neither image is blank.
func compare(a, b image.Image, tol int) (result, error) {
	ra, rb := a.Bounds(), b.Bounds()
	if ra.Dx() != rb.Dx() || ra.Dy() != rb.Dy() {
		return result{}, fmt.Errorf("the images differ in size: %dx%d and %dx%d", ra.Dx(), ra.Dy(), rb.Dx(), rb.Dy())
	}
	if ra.Empty() {
		return result{}, errors.New("the images are empty")
	}
	var r result
	ca, cb := map[[3]uint8]int{}, map[[3]uint8]int{}
	for y := 0; y < ra.Dy(); y++ {
		for x := 0; x < ra.Dx(); x++ {
			pa, pb := rgb(a.At(ra.Min.X+x, ra.Min.Y+y)), rgb(b.At(rb.Min.X+x, rb.Min.Y+y))
			ca[pa]++
			cb[pb]++
			r.total++
			worst := 0
			for c := range 3 {
				worst = max(worst, abs(int(pa[c])-int(pb[c])))
			}
			r.maxDiff = max(r.maxDiff, worst)
			if worst > tol {
				r.bad++
			}
		}
	}
	if why := blank(ca, r.total); why != "" {
		r.blank = "the first image " + why
	} else if why := blank(cb, r.total); why != "" {
		r.blank = "the second image " + why
	}
	return r, nil
}

// blank says why an image with these colour counts shows no crowd: fewer
// than 50 colours, or under 2% of the pixels outside its two commonest
// colours (the clear colour and the ground). "" when it shows one.
func blank(counts map[[3]uint8]int, total int) string {
	first, second := 0, 0
	for _, n := range counts {
		if n > first {
			first, second = n, first
		} else if n > second {
			second = n
		}
	}
	rest := total - first - second
	if len(counts) < 50 || rest*50 < total {
		return fmt.Sprintf("looks blank (%d colours, %d of %d pixels outside the two commonest)", len(counts), rest, total)
	}
	return ""
}

func rgb(c interface{ RGBA() (r, g, b, a uint32) }) [3]uint8 {
	r, g, b, _ := c.RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
