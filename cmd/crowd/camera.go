package main

import (
	"math"

	"github.com/vkjobs/vkjobs/anim/vmath"
	"github.com/vkjobs/vkjobs/gpu/gfx"
)

// camera is one frame's view: computed when the frame is issued and read
// by its gather jobs (culling, depth) and its recording (view matrix).
type camera struct {
	eye      [3]float32
	fog      float32       // fog density (gfx.View.FogDensity), per metre
	viewProj [16]float32   // world to Vulkan clip space, column-major
	planes   [6][4]float32 // frustum planes: dot(p, (x,y,z,1)) >= 0 inside
}

// crowdLayout places n characters on a grid spacing metres apart, centred
// on the origin; it returns the positions and the grid's half extents.
func crowdLayout(n int, spacing float32) (pos [][3]float32, halfX, halfZ float32) {
	cols := int(math.Ceil(math.Sqrt(float64(n) * 1.6)))
	rows := (n + cols - 1) / cols
	halfX = float32(cols-1) * spacing / 2
	halfZ = float32(rows-1) * spacing / 2
	pos = make([][3]float32, n)
	for i := range pos {
		c, r := i%cols, i/cols
		pos[i] = [3]float32{float32(c)*spacing - halfX, 0, float32(r)*spacing - halfZ}
	}
	return pos, halfX, halfZ
}

// set looks at the crowd from the front (+z side) and a little above, as a
// spectator would, orbiting by angle radians about the vertical axis. The
// front row fills the picture's width; the rows behind recede towards a
// horizon about a fifth of the way down the picture, where the ground
// (groundExtent) fades into fog of the sky's colour. The fog is set so that
// the back row keeps about three quarters of its colour and the ground is
// fully fogged well before its edge.
func (c *camera) set(halfX, halfZ, height, aspect, angle float32) {
	fovY := float32(40 * math.Pi / 180)
	elev := float32(camElevDeg * math.Pi / 180)
	se, ce := float32(math.Sin(float64(elev))), float32(math.Cos(float64(elev)))
	tanY := float32(math.Tan(float64(fovY) / 2))
	hx, hz := max(halfX, halfZ*0.5)+height*0.5, halfZ+height*0.5
	// Aim a little in front of the crowd's centre; the rows there span
	// the picture's width.
	sa, ca := float32(math.Sin(float64(angle))), float32(math.Cos(float64(angle)))
	fwd := hz * camForward
	target := [3]float32{fwd * sa, height * 0.5, fwd * ca}
	d := camZoom*hx/(tanY*aspect) + fwd
	d = max(d, 3*height)
	c.eye = [3]float32{target[0] + d*ce*sa, target[1] + d*se, target[2] + d*ce*ca}
	view := vmath.LookAt(c.eye, target, [3]float32{0, 1, 0})
	back := d + hz                 // the farthest characters
	c.fog = 0.55 / back            // exp(-0.55^2) = 74% kept at the back row
	near := max(0.1, c.eye[1]*0.5) // the ground is never nearer than the eye's height
	far := 1.5 * groundExtent(halfX, halfZ, height)
	proj := gfx.VulkanClip(vmath.Perspective(fovY, aspect, near, far))
	c.viewProj = vmath.Mul4f(&proj, &view)
	m := &c.viewProj
	row := func(i int) [4]float32 { return [4]float32{m[i], m[4+i], m[8+i], m[12+i]} }
	r0, r1, r2, r3 := row(0), row(1), row(2), row(3)
	for i := range 4 {
		c.planes[0][i] = r3[i] + r0[i] // left
		c.planes[1][i] = r3[i] - r0[i] // right
		c.planes[2][i] = r3[i] + r1[i] // top (Vulkan y down)
		c.planes[3][i] = r3[i] - r1[i] // bottom
		c.planes[4][i] = r2[i]         // near: z >= 0
		c.planes[5][i] = r3[i] - r2[i] // far
	}
	for p := range c.planes {
		pl := &c.planes[p]
		l := float32(math.Sqrt(float64(pl[0]*pl[0] + pl[1]*pl[1] + pl[2]*pl[2])))
		if l > 0 {
			for i := range pl {
				pl[i] /= l
			}
		}
	}
}

// groundExtent is the half size of the square ground: far enough that, at
// the fog set by camera.set (density 0.55 / the back row's distance), the
// ground is fully fogged (under 1% of its colour left, at 4 times the back
// row's distance) long before its edge, from any orbit angle.
func groundExtent(halfX, halfZ, height float32) float32 {
	hx, hz := max(halfX, halfZ*0.5)+height*0.5, halfZ+height*0.5
	r := float32(math.Hypot(float64(hx), float64(hz)))
	return 12 * (r + 10*height)
}

// The camera's placement (set): elevation above the target, how far in
// front of the crowd's centre it aims (a fraction of the crowd's half
// depth), and the share of the crowd's width the aimed-at row spans.
var (
	camElevDeg float64 = 18
	camForward float32 = 0.05
	camZoom    float32 = 0.75
)

// visible reports whether a sphere intersects the frustum.
func (c *camera) visible(p [3]float32, radius float32) bool {
	for i := range c.planes {
		pl := &c.planes[i]
		if pl[0]*p[0]+pl[1]*p[1]+pl[2]*p[2]+pl[3] < -radius {
			return false
		}
	}
	return true
}
