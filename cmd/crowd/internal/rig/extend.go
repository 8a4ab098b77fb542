package rig

import (
	"fmt"
	"math"
	"regexp"

	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/anim/vmath"
)

// A chain of procedural bones hung on a joint of the source skeleton:
// fingers on the hands, a cape on the chest, a tail on the hips, a
// ponytail and antennae on the head. Directions are in model space at rest
// with the character facing +z, its left along +x and y up.
type chainSpec struct {
	name   string
	attach string // hips, chest, head, lhand, rhand
	offset vec3   // from the attach joint, metres (scaled with the figure)
	dir    vec3   // direction of the chain
	links  int
	length float64 // first link, metres (scaled)
	taper  float64 // each link is this times the previous one
	wv, ww float64 // box cross-section: along side, and across
	side   vec3    // width axis hint
	axis   vec3    // oscillation axis
	amp    float64 // radians
	freq   float64 // Hz
	lag    float64 // radians per link
}

type extension struct {
	sk     *offline.Skeleton
	extras []Extra
	chains []string
	// Box shape of each extra bone (index bone - source bones).
	shape []boxShape
}

type boxShape struct {
	wv, ww float64
	side   vec3
	length float64 // of a chain's last link
}

// attachPatterns find attach joints by name; geometry decides otherwise.
var attachPatterns = map[string]*regexp.Regexp{
	"hips":  regexp.MustCompile(`(?i)^(hips|pelvis|root)$`),
	"chest": regexp.MustCompile(`(?i)^(spine1|spine2|chest|upperchest)$`),
	"head":  regexp.MustCompile(`(?i)^head$`),
	"lhand": regexp.MustCompile(`(?i)^(lfingers|lefthand|hand_?l|l_?hand)$`),
	"rhand": regexp.MustCompile(`(?i)^(rfingers|righthand|hand_?r|r_?hand)$`),
}

func chainTemplates(handL, handR vec3) []chainSpec {
	up := vec3{0, 1, 0}
	fingers := func(name, attach string, dir vec3) []chainSpec {
		curl := dir.Cross(up).Unit()
		if curl.Len() < 0.5 {
			curl = vec3{0, 0, 1}
		}
		var out []chainSpec
		for i := range 4 {
			out = append(out, chainSpec{
				name: fmt.Sprintf("%s%d", name, i), attach: attach,
				offset: dir.Mul(0.02).Add(vec3{0, 0, -0.027 + 0.018*float64(i)}),
				dir:    dir, links: 3, length: 0.034, taper: 0.8, wv: 0.014, ww: 0.014,
				side: vec3{0, 0, 1}, axis: curl, amp: 0.35, freq: 0.7, lag: 0.35 + 0.1*float64(i),
			})
		}
		return out
	}
	var t []chainSpec
	for i, x := range []float64{-0.11, 0, 0.11} {
		t = append(t, chainSpec{
			name: fmt.Sprintf("cape%d", i), attach: "chest",
			offset: vec3{x, 0.06, -0.12}, dir: vec3{x * 0.6, -1, -0.12}.Unit(),
			links: 5, length: 0.11, taper: 1, wv: 0.11, ww: 0.015, side: vec3{1, 0, 0},
			axis: vec3{1, 0, 0}, amp: 0.1, freq: 1.1, lag: 0.55 + 0.2*float64(i),
		})
	}
	t = append(t, chainSpec{
		name: "tail", attach: "hips", offset: vec3{0, -0.02, -0.11}, dir: vec3{0, -0.45, -1}.Unit(),
		links: 8, length: 0.085, taper: 0.93, wv: 0.06, ww: 0.06, side: vec3{1, 0, 0},
		axis: vec3{0, 1, 0}, amp: 0.16, freq: 1.5, lag: 0.5,
	})
	t = append(t, chainSpec{
		name: "ponytail", attach: "head", offset: vec3{0, 0.12, -0.1}, dir: vec3{0, -0.7, -1}.Unit(),
		links: 6, length: 0.055, taper: 0.95, wv: 0.045, ww: 0.04, side: vec3{1, 0, 0},
		axis: vec3{1, 0.6, 0}.Unit(), amp: 0.14, freq: 1.3, lag: 0.5,
	})
	t = append(t, fingers("lfinger", "lhand", handL)...)
	t = append(t, fingers("rfinger", "rhand", handR)...)
	for i, x := range []float64{-1, 1} {
		t = append(t, chainSpec{
			name: fmt.Sprintf("antenna%d", i), attach: "head", offset: vec3{0.05 * x, 0.17, 0.02},
			dir: vec3{0.35 * x, 1, 0.25}.Unit(), links: 3, length: 0.07, taper: 0.9, wv: 0.014, ww: 0.014,
			side: vec3{1, 0, 0}, axis: vec3{0, 0, 1}, amp: 0.3, freq: 2.1, lag: 0.7 + 0.4*float64(i),
		})
	}
	return t
}

// extend returns the skeleton grown to n bones with procedural chains.
// With n above what the templates hold, ribbons of six links are hung on
// the hands, feet, hips and chest in turn.
func extend(sk *offline.Skeleton, n int) *extension {
	ext := &extension{sk: sk}
	if n <= sk.NumBones() {
		return ext
	}
	model := restModel(sk)
	nb := sk.NumBones()
	pos := func(b int) vec3 { return model[b].Translation() }
	lo, hi := math.Inf(1), math.Inf(-1)
	for b := range nb {
		lo, hi = math.Min(lo, pos(b)[1]), math.Max(hi, pos(b)[1])
	}
	height := hi - lo
	scale := height / 1.55 // the templates are sized for a CMU figure
	if !(scale > 0.05) {
		scale = 1
	}
	find := func(kind string) int {
		for b, name := range sk.Names {
			if attachPatterns[kind].MatchString(name) {
				return b
			}
		}
		best, bestScore := 0, math.Inf(-1)
		for b := range nb {
			p := pos(b)
			var s float64
			switch kind {
			case "hips":
				if sk.Parents[b] < 0 {
					return b
				}
				continue
			case "head":
				s = p[1]
			case "chest":
				s = -math.Abs(p[1]-(lo+0.75*height)) - 2*math.Abs(p[0])
			case "lhand":
				s = p[0]
			case "rhand":
				s = -p[0]
			}
			if s > bestScore {
				best, bestScore = b, s
			}
		}
		return best
	}
	handDir := func(b int, fallback vec3) vec3 {
		for c := b; c >= 0 && sk.Parents[c] >= 0; c = int(sk.Parents[c]) {
			d := pos(c).Sub(pos(int(sk.Parents[c])))
			if d.Len() > 0.01 {
				return d.Unit()
			}
		}
		return fallback
	}
	attach := map[string]int{}
	for _, k := range []string{"hips", "chest", "head", "lhand", "rhand"} {
		attach[k] = find(k)
	}
	specs := chainTemplates(handDir(attach["lhand"], vec3{1, 0, 0}), handDir(attach["rhand"], vec3{-1, 0, 0}))
	ribbonAt := []string{"lhand", "rhand", "hips", "chest", "head"}
	for i := 0; countLinks(specs) < n-nb; i++ {
		at := ribbonAt[i%len(ribbonAt)]
		specs = append(specs, chainSpec{
			name: fmt.Sprintf("ribbon%d", i), attach: at, offset: vec3{0, 0, -0.05}, dir: vec3{0.1 * float64(i%3-1), -1, -0.3}.Unit(),
			links: 6, length: 0.07, taper: 0.95, wv: 0.05, ww: 0.01, side: vec3{1, 0, 0},
			axis: vec3{1, 0, 0}, amp: 0.2, freq: 0.9 + 0.1*float64(i%4), lag: 0.6,
		})
	}

	out := &offline.Skeleton{
		Name:    fmt.Sprintf("%s+%d", sk.Name, n-nb),
		Names:   append([]string(nil), sk.Names...),
		Parents: append([]int32(nil), sk.Parents...),
		Rest:    append([]offline.Transform(nil), sk.Rest...),
	}
	if sk.InverseBind != nil {
		out.InverseBind = append([][16]float32(nil), sk.InverseBind...)
	}
	// SkinJoint stays nil: the glTF mesh loader maps skin joints to bones
	// with the source skeleton's table, and extra bones have no skin joint.
	full := append([]mat(nil), model...)
	left := n - nb
	for ci, c := range specs {
		if left == 0 {
			break
		}
		links := min(c.links, left)
		left -= links
		parent := attach[c.attach]
		p := pos(parent).Add(c.offset.Mul(scale))
		length := c.length * scale
		desc := fmt.Sprintf("%s (%d on %s)", c.name, links, sk.Names[parent])
		ext.chains = append(ext.chains, desc)
		for k := range links {
			b := len(out.Parents)
			pm := &full[parent]
			// Local rest transform placing the bone at p with a model-space
			// orientation equal to the world axes.
			inv := pm.Inverse()
			lt := inv.Point(p)
			lr := pm.Rotation().Conj()
			out.Names = append(out.Names, fmt.Sprintf("%s.%d", c.name, k))
			out.Parents = append(out.Parents, int32(parent))
			out.Rest = append(out.Rest, offline.Transform{T: lt, R: lr, S: offline.Vec3{1, 1, 1}})
			l := vmath.Transform{T: lt, R: lr, S: vec3{1, 1, 1}}.Matrix()
			full = append(full, pm.Mul(&l))
			if out.InverseBind != nil {
				ib := full[b].Inverse()
				var f [16]float32
				for i := range f {
					f[i] = float32(ib[i])
				}
				out.InverseBind = append(out.InverseBind, f)
			}
			ext.extras = append(ext.extras, Extra{
				Bone:  b,
				Rest:  [4]float32{float32(lr[0]), float32(lr[1]), float32(lr[2]), float32(lr[3])},
				Axis:  [3]float32{float32(c.axis[0]), float32(c.axis[1]), float32(c.axis[2])},
				Amp:   float32(c.amp),
				Omega: float32(2 * math.Pi * c.freq),
				Lag:   float32(c.lag*float64(k) + 0.9*float64(ci)),
			})
			ext.shape = append(ext.shape, boxShape{wv: c.wv * scale * math.Pow(c.taper, float64(k)), ww: c.ww * scale * math.Pow(c.taper, float64(k)), side: c.side, length: length})
			parent = b
			p = p.Add(c.dir.Mul(length))
			length *= c.taper
		}
	}
	ext.sk = out
	return ext
}

func countLinks(specs []chainSpec) int {
	n := 0
	for _, c := range specs {
		n += c.links
	}
	return n
}
