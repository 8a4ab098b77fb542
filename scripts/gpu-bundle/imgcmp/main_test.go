package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scene draws a picture that is not blank: a background, a ground and a
// gradient of many colours in the middle.
func scene(w, h int) *image.RGBA {
	im := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{40, 40, 60, 255}
			if y > h*3/4 {
				c = color.RGBA{90, 120, 60, 255}
			} else if x > w/4 && x < w*3/4 && y > h/4 {
				c = color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255}
			}
			im.SetRGBA(x, y, c)
		}
	}
	return im
}

func save(t *testing.T, im image.Image) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.png")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, im); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func TestCompare(t *testing.T) {
	a := scene(200, 100)
	b := scene(200, 100)
	// 1% of the pixels moved by 9 (over the tolerance), others by 8.
	for i := range 200 {
		b.Pix[4*i*5] += 9
	}
	b.Pix[4*7+1] += 8
	pa, pb := save(t, a), save(t, b)
	var out, errb bytes.Buffer
	if code := run([]string{pa, pb}, &out, &errb); code != 0 || !strings.Contains(out.String(), "200 of 20000 pixels (1.000%) differ by more than 8") ||
		!strings.Contains(out.String(), "largest difference 9: within the tolerance") {
		t.Errorf("1%% moved: exit %d, %s%s", code, out.String(), errb.String())
	}
	// One pixel more is outside.
	b.Pix[4*1001] += 20
	pb = save(t, b)
	out.Reset()
	if code := run([]string{pa, pb}, &out, &errb); code != 1 || !strings.Contains(out.String(), "OUTSIDE the tolerance") {
		t.Errorf("1%% + 1 moved: exit %d, %s", code, out.String())
	}
	// A looser tolerance accepts it.
	out.Reset()
	if code := run([]string{"-tol", "20", pa, pb}, &out, &errb); code != 0 {
		t.Errorf("-tol 20: exit %d, %s", code, out.String())
	}
}

func TestBlankAndBadInput(t *testing.T) {
	blank := image.NewRGBA(image.Rect(0, 0, 200, 100))
	for i := range blank.Pix {
		blank.Pix[i] = 255
	}
	pa, pb := save(t, scene(200, 100)), save(t, blank)
	var out, errb bytes.Buffer
	if code := run([]string{pa, pb}, &out, &errb); code != 1 || !strings.Contains(out.String(), "the second image looks blank (1 colours") {
		t.Errorf("blank: exit %d, %s", code, out.String())
	}
	small := save(t, scene(100, 100))
	errb.Reset()
	if code := run([]string{pa, small}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "the images differ in size: 200x100 and 100x100") {
		t.Errorf("sizes: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{pa, "/nonexistent.png"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "/nonexistent.png") {
		t.Errorf("missing file: exit %d, %s", code, errb.String())
	}
	notPNG := filepath.Join(t.TempDir(), "x.png")
	os.WriteFile(notPNG, []byte("text"), 0o644)
	errb.Reset()
	if code := run([]string{pa, notPNG}, &out, &errb); code != 2 || !strings.Contains(errb.String(), notPNG+": not a readable PNG") {
		t.Errorf("not a PNG: exit %d, %s", code, errb.String())
	}
	for _, args := range [][]string{{pa}, {"-tol", "300", pa, pa}, {"-percent", "-1", pa, pa}} {
		errb.Reset()
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
			t.Errorf("%q: exit %d, %s", args, code, errb.String())
		}
	}
}
