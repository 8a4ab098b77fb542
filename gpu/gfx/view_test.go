package gfx

import (
	"image"
	"image/color"
	"testing"

	"github.com/vkjobs/vkjobs/render"
)

// TestGfxFogAndHemisphere: View's fog fades surfaces into FogColor with
// their distance from Eye and leaves the cleared background alone; its
// hemisphere ambient darkens faces that turn away from the sky and never
// brightens one. (With neither, the golden image holds: TestGfxGolden.)
func TestGfxFogAndHemisphere(t *testing.T) {
	d, _ := gfxDevice(t)
	e := newGfxEnv(t, d, 2, render.Config{Ranges: 2, MinRange: 1})
	const w, h = 160, 120
	g := newOffscreen(t, d, w, h)
	base := DefaultView()
	base.ViewProj = camera(w, h)
	base.Eye = [3]float32{1.5, 4, 9} // camera's eye
	g.SetView(base)
	sc := buildScene(t, e, d, g)
	shot := func(v View) *image.RGBA {
		g.SetView(v)
		renderScene(t, e, g, sc)
		img, err := g.Image()
		must(t, err)
		return img
	}
	plain := shot(base)
	bg := plain.RGBAAt(1, 1)

	// Thick fog: every surface (all farther than 6 from the eye) turns
	// the fog's colour; the background stays the clear colour.
	v := base
	v.FogColor, v.FogDensity = [3]float32{1, 0, 1}, 5
	fog := shot(v)
	magenta := color.RGBA{255, 0, 255, 255}
	drawn, fogged := 0, 0
	for y := range h {
		for x := range w {
			p, q := plain.RGBAAt(x, y), fog.RGBAAt(x, y)
			if near(p, bg, 0) {
				if !near(q, bg, 0) {
					t.Fatalf("fog changed the background at (%d,%d): %v", x, y, q)
				}
				continue
			}
			drawn++
			if near(q, magenta, 2) {
				fogged++
			}
		}
	}
	// The translucent box blends over the background at its edges.
	if drawn < w*h/10 || fogged < drawn*9/10 {
		t.Errorf("thick fog: %d of %d drawn pixels took the fog's colour", fogged, drawn)
	}
	// A negative density means no fog.
	v.FogDensity = -1
	if bad, worst := diffImages(shot(v), plain, 0); bad > 0 {
		t.Errorf("negative fog density: %d pixels differ (worst %d)", bad, worst)
	}

	// Hemisphere: ambient only, white from above, black from below.
	amb := base
	amb.LightColor = [3]float32{}
	amb.Ambient = [3]float32{0.8, 0.8, 0.8}
	flat := shot(amb)
	amb.GroundAmbient = [3]float32{0.0001, 0, 0}
	hemi := shot(amb)
	darker := 0
	for y := range h {
		for x := range w {
			p, q := flat.RGBAAt(x, y), hemi.RGBAAt(x, y)
			if q.R > p.R+1 || q.G > p.G+1 || q.B > p.B+1 {
				t.Fatalf("the hemisphere brightened (%d,%d): %v -> %v", x, y, p, q)
			}
			if int(q.R)+int(q.G)+int(q.B)+6 < int(p.R)+int(p.G)+int(p.B) {
				darker++
			}
		}
	}
	if darker < w*h/50 {
		t.Errorf("the hemisphere darkened only %d pixels (sides and undersides should be)", darker)
	}
}
