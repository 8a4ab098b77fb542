package offline

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// TestQuantEstimate is a measurement, not a check (set
// VKJOBS_ANIM_ESTIMATE=1 to run it, about a minute; VKJOBS_ANIM_ESTIMATE_CLIP
// picks one clip): it estimates a frame-addressable format that keeps
// every frame, like the uniform codec, but quantises with the curve
// codec's quantiser: one grid step per animated track, rotations closed
// loop (each is quantised as the local rotation that restores its bone's
// source model orientation given the decoded ancestors, as the curve fit
// targets), all steps scaled by one factor that is calibrated, through
// measure (the error at samples and between them, as Measure computes
// it), until the 99th percentile is just within the tolerance. The clip
// is cut into segments of L frames (8, 16, 32) that share no frame; the
// decoder lerps (rotations: nlerp) neighbouring frames, as the uniform
// codec's sampler does. Two sources of steps:
//
//   - curve: each track's step as the curve codec chose it for this clip
//     (its allocation times the fraction of the threshold its fit left
//     to quantisation);
//   - alloc: the curve codec's per-track thresholds (its allocation)
//     turned into steps with the whole threshold given to quantisation.
//
// Layouts (each track, segment and stored component has a minimum and a
// width; rotations drop the largest component per segment, 3 bits):
//
//   - step: values on the track's grid (idx × step, as the curve codec
//     stores them), stored as idx - min. "int": width
//     ceil(log2(range+1)) bits per component; "frac": a frame's
//     components of one track packed into one mixed-radix integer of
//     ceil(log2(Π (range_c+1))) bits (any step: no power-of-two rounding
//     of the code space); "pred": int, but the segment's inner frames as
//     residuals against the rounded lerp of its first and last (a width
//     and a minimum residual more per component).
//   - p2: the uniform codec's kind of grid: per segment and component the
//     width w the step needs over the range, then the finer step
//     range / (2^w - 1), so that all 2^w codes are used (calibrated on
//     its own: its errors are smaller for the same factor).
//
// "seg" stores per segment, track and component the minimum as an offset
// from the clip's minimum (at the width of the clip's range on the grid;
// the clip's minimum per track and component in the track's table) and a
// 5-bit width; "clip" stores one minimum and width per track and
// component for the whole clip. Every layout adds a 32-bit offset per
// segment; the rest of the record (tables, default pose, name) is the
// curve codec's record less its stream and segment table. Ratios are
// printed as multiples of ACL's (issue 16's table).
func TestQuantEstimate(t *testing.T) {
	if os.Getenv("VKJOBS_ANIM_ESTIMATE") == "" {
		t.Skip("a measurement: set VKJOBS_ANIM_ESTIMATE=1")
	}
	acl := map[string]float64{"01_01@0": 13.57, "01_01@30": 11.57, "01_03@0": 13.16, "01_03@30": 11.63,
		"Boxing_Toes@0": 9.84, "Boxing_Toes@30": 8.75}
	var out strings.Builder
	fmt.Fprintf(&out, "%-16s %6s %6s %5s %3s | %s\n", "clip@Hz", "ACL", "curve", "steps", "L",
		"x ACL: step-int seg / clip, step-frac seg / clip, p2 seg / clip, pred seg, frac data only, frac coarse base 4/6/8 bits   (scale, p99 / max cm: step; p2 seg; p2 clip)")
	for _, name := range []string{"01_01", "01_03", "Boxing_Toes"} {
		if only := os.Getenv("VKJOBS_ANIM_ESTIMATE_CLIP"); only != "" && only != name {
			continue
		}
		path := assimpBVH + "/" + name + ".bvh"
		needAssimp(t, path)
		im, err := LoadFile(path, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, hz := range []float64{0, 30} {
			c := im.Clips[0]
			if hz > 0 {
				if c, err = c.Resample(hz); err != nil {
					t.Fatal(err)
				}
			}
			sk := im.Skeleton
			opt := CompressOptions{}
			cc, err := Compress(sk, c, opt)
			if err != nil {
				t.Fatal(err)
			}
			opt.defaults()
			a := acl[fmt.Sprintf("%s@%g", name, hz)]
			raw := float64(cc.Stats.RawBytes)
			base := float64(cc.Stats.Bytes - cc.Stats.StreamBytes - 4*len(cc.segBits))
			steps := make([]float64, len(c.Tracks))
			for _, sl := range cc.slots {
				steps[sl.bone*3+int(sl.kind)] = float64(sl.step)
			}
			// alloc: the steps the curve codec's allocation gives with
			// the whole threshold to quantisation (stepFractions 1), so
			// without the per-track fraction its curve fit picked.
			alloc := make([]float64, len(c.Tracks))
			lv := leverArms(sk, c, opt.VertexDistance)
			flv := lv
			if cc.closed {
				shield := make([]bool, sk.NumBones())
				for ti, st := range steps {
					if st != 0 && TrackKind(ti%3) == TrackRotation {
						shield[ti/3] = true
					}
				}
				flv = leverArmsShielded(sk, c, opt.VertexDistance, shield)
			}
			for ti, st := range steps {
				if st == 0 {
					continue
				}
				b, tt := ti/3, cc.tols[ti]
				switch TrackKind(ti % 3) {
				case TrackRotation:
					alloc[ti] = tt / (1.75 * flv.reach[b])
				case TrackScale:
					alloc[ti] = tt / (1.75 * lv.reach[b])
				default:
					alloc[ti] = 2 * tt / math.Sqrt(3) / math.Max(flv.pscale[b], 1e-9)
				}
			}
			for _, src := range []struct {
				name  string
				steps []float64
			}{{"curve", steps}, {"alloc", alloc}} {
				for _, L := range []int{8, 16, 32} {
					ratio := func(bits float64) float64 {
						nseg := (c.Frames + L - 1) / L
						return raw / (base + 4*float64(nseg) + bits/8) / a
					}
					st, sS, pS := calibrateQuant(t, sk, c, cc, src.steps, L, false, opt.Tolerance, opt.VertexDistance)
					p2s, p2S, p2P := calibrateQuant(t, sk, c, cc, src.steps, L, true, opt.Tolerance, opt.VertexDistance)
					p2c, p2cS, p2cP := calibrateQuantClip(t, sk, c, cc, src.steps, L, opt.Tolerance, opt.VertexDistance)
					fmt.Fprintf(&out, "%-16s %6.2f %6.2f %s %3d | %.2f / %.2f, %.2f / %.2f, %.2f / %.2f, %.2f, %.2f, %.2f/%.2f/%.2f   (%.2f, %.4f / %.4f; %.2f, %.4f / %.4f; %.2f, %.4f / %.4f)\n",
						fmt.Sprintf("%s@%g", name, c.Rate), a, cc.Stats.Ratio(), src.name, L,
						ratio(st.intSeg), ratio(st.intClip), ratio(st.fracSeg), ratio(st.fracClip),
						ratio(p2s.intSeg), ratio(p2c.intClip), ratio(st.predSeg), ratio(st.fracData), ratio(st.coarse[0]), ratio(st.coarse[1]), ratio(st.coarse[2]), sS, 100*pS.WorstP99(), 100*pS.WorstMax(), p2S, 100*p2P.WorstP99(), 100*p2P.WorstMax(), p2cS, 100*p2cP.WorstP99(), 100*p2cP.WorstMax())
				}
			}
			t.Logf("%s@%g done", name, c.Rate)
		}
	}
	t.Log("\n" + out.String())
}

// quantBits is the stream size of one quantisation, in bits.
type quantBits struct {
	intSeg, intClip, fracSeg, fracClip float64
	predSeg                            float64    // step-int seg with the interior frames predicted
	fracData                           float64    // step-frac's frame data alone: no minima, widths or modes (a bound)
	coarse                             [3]float64 // step-frac with the segment's base on a coarse grid of 2^4, 2^6, 2^8 levels over the clip's range
}

// calibrateQuant searches the factor on the curve codec's steps that puts
// the 99th percentile of the error (at and between samples) just within
// tol, and returns the bits at the best factor found (the largest within
// tol), the factor and its p99. p2 selects the power-of-two grids over
// per-segment ranges.
func calibrateQuant(t *testing.T, sk *Skeleton, c *Clip, cc *CompressedClip, steps []float64, L int, p2 bool, tol, dist float64) (quantBits, float64, ErrorStats) {
	return calibrateWith(t, tol, func(s float64) (quantBits, ErrorStats) {
		dec, bits := quantClip(sk, c, cc, steps, s, L, p2, false)
		return bits, measureDecoded(t, sk, c, cc, dec, dist)
	})
}

// calibrateQuantClip is calibrateQuant for power-of-two grids over the
// clip's ranges (no per-segment ranges).
func calibrateQuantClip(t *testing.T, sk *Skeleton, c *Clip, cc *CompressedClip, steps []float64, L int, tol, dist float64) (quantBits, float64, ErrorStats) {
	return calibrateWith(t, tol, func(s float64) (quantBits, ErrorStats) {
		dec, bits := quantClip(sk, c, cc, steps, s, L, true, true)
		return bits, measureDecoded(t, sk, c, cc, dec, dist)
	})
}

func calibrateWith(t *testing.T, tol float64, pass func(s float64) (quantBits, ErrorStats)) (quantBits, float64, ErrorStats) {
	s := 1.0
	var best quantBits
	var bestE ErrorStats
	bestS, found := 0.0, false
	var tried [][2]float64
	for range 7 {
		bits, es := pass(s)
		p99 := es.WorstP99()
		if p99 <= tol && (!found || s > bestS) {
			best, bestS, bestE, found = bits, s, es, true
		}
		if p99 <= tol && p99 >= 0.985*tol {
			break
		}
		tried = append(tried, [2]float64{math.Log(s), math.Log(p99)})
		slope := 1.0
		if n := len(tried); n >= 2 {
			if d := tried[n-1][0] - tried[n-2][0]; d != 0 {
				if sl := (tried[n-1][1] - tried[n-2][1]) / d; sl > 0.3 && sl < 3 {
					slope = sl
				}
			}
		}
		s *= math.Pow(0.993*tol/p99, 1/slope)
	}
	if !found {
		t.Fatalf("no factor met the tolerance")
	}
	return best, bestS, bestE
}

// quantClip quantises every animated track of c (the curve codec's
// animated tracks, steps[ti] × s) at every frame, rotations closed loop
// as the curve codec fits them when cc.closed (against the local
// rotation that restores the bone's source model orientation given the
// decoded ancestors), and returns the decoded values [ti][frame] (nil for
// constant tracks) and the stream bits. clipRange (p2 only) takes the
// ranges over the whole clip instead of per segment.
func quantClip(sk *Skeleton, c *Clip, cc *CompressedClip, steps []float64, s float64, L int, p2, clipRange bool) ([][][4]float32, quantBits) {
	nb, F := sk.NumBones(), c.Frames
	dec := make([][][4]float32, len(c.Tracks))
	var bits quantBits
	srcModel := modelRotations(sk, c, func(b, f int) Quat {
		tr := &c.Tracks[3*b+int(TrackRotation)]
		return Quat(tr.Values[tr.sampleIndex(f)])
	})
	decModel := make([][]Quat, nb)
	nseg := (F + L - 1) / L
	for b := range nb {
		p := int(sk.Parents[b])
		for k := range 3 {
			ti := 3*b + k
			kind := TrackKind(k)
			tr := &c.Tracks[ti]
			if steps[ti] == 0 {
				continue
			}
			step := steps[ti] * s
			tgt := make([][4]float64, F)
			maxAbs := 0.0
			for f := range F {
				v := tr.Values[tr.sampleIndex(f)]
				if kind == TrackRotation && cc.closed && p >= 0 {
					v = [4]float64(rotationTarget(decModel[p][f], srcModel[p][f], Quat(v)))
				}
				tgt[f] = v
				for j := range 4 {
					maxAbs = math.Max(maxAbs, math.Abs(v[j]))
				}
			}
			absBits := float64(format.BitsFor(int(math.Ceil(maxAbs/step))+1) + 1)
			// Per segment: mode, stored components (sign per mode).
			modes := make([]uint32, nseg)
			comps := make([][4]float64, F) // stored components
			ncs := make([]int, nseg)
			for sg := range nseg {
				a, e := sg*L, min(F, sg*L+L)
				mode := uint32(format.ModeAll)
				if kind == TrackRotation {
					mode = format.RotationMode(tgt[a:e])
				}
				modes[sg] = mode
				ncs[sg] = format.NcompOf(uint32(kind), mode)
				for f := a; f < e; f++ {
					v := tgt[f]
					if kind == TrackRotation && mode != format.ModeAll {
						if v[mode] < 0 {
							v = [4]float64(Quat(v).Neg())
						}
						j := 0
						for ci := range 4 {
							if ci != int(mode) {
								comps[f][j] = v[ci]
								j++
							}
						}
					} else {
						comps[f] = v
					}
				}
			}
			// Clip-wide ranges per stored component slot.
			var clo, chi [4]float64
			for j := range 4 {
				clo[j], chi[j] = math.Inf(1), math.Inf(-1)
			}
			for sg := range nseg {
				for f := sg * L; f < min(F, sg*L+L); f++ {
					for j := range ncs[sg] {
						clo[j] = math.Min(clo[j], comps[f][j])
						chi[j] = math.Max(chi[j], comps[f][j])
					}
				}
			}
			var cimin, cimax [4]int64
			for j := range 4 {
				cimin[j], cimax[j] = math.MaxInt64, math.MinInt64
			}
			out := make([][4]float32, F)
			idx := make([][4]int64, F)
			for sg := range nseg {
				for f := sg * L; f < min(F, sg*L+L); f++ {
					for j := range ncs[sg] {
						q := int64(math.Round(comps[f][j] / step))
						idx[f][j] = q
						cimin[j], cimax[j] = min(cimin[j], q), max(cimax[j], q)
					}
				}
			}
			// A segment's minimum is stored as an offset from the clip's
			// minimum (in the track's table, at absBits per component),
			// at the width of the clip's range on the grid.
			var minBits float64
			for j := range 4 {
				if cimax[j] >= cimin[j] {
					minBits = math.Max(minBits, float64(format.BitsFor(int(cimax[j]-cimin[j]))))
					bits.intSeg += absBits
					bits.fracSeg += absBits
					bits.predSeg += absBits
					for ci := range bits.coarse {
						bits.coarse[ci] += absBits + 5
					}
				}
			}
			for sg := range nseg {
				a, e := sg*L, min(F, sg*L+L)
				nc := ncs[sg]
				hdr := 0.0
				if kind == TrackRotation {
					hdr = 3
				}
				bits.intClip += hdr
				bits.fracClip += hdr
				bits.intSeg += hdr + float64(nc)*(5+minBits)
				bits.fracSeg += hdr + float64(nc)*(5+minBits)
				var st [4]float32 // stored components as decoded
				if !p2 {
					var lo, hi [4]int64
					for j := range nc {
						lo[j], hi[j] = math.MaxInt64, math.MinInt64
					}
					for f := a; f < e; f++ {
						for j := range nc {
							lo[j], hi[j] = min(lo[j], idx[f][j]), max(hi[j], idx[f][j])
						}
					}
					wsum, lsum := 0, 0.0
					for j := range nc {
						wsum += format.BitsFor(int(hi[j] - lo[j]))
						lsum += math.Log2(float64(hi[j] - lo[j] + 1))
					}
					bits.intSeg += float64((e - a) * wsum)
					bits.fracSeg += float64(e-a) * math.Ceil(lsum-1e-9)
					bits.fracData += float64(e-a) * math.Ceil(lsum-1e-9)
					for ci, kb := range []int{4, 6, 8} {
						cl := 0.0
						for j := range nc {
							g := max(1, (cimax[j]-cimin[j]+1)>>kb+1)
							base := cimin[j] + (lo[j]-cimin[j])/g*g
							cl += math.Log2(float64(hi[j] - base + 1))
						}
						bits.coarse[ci] += hdr + float64(nc*(kb+5)) + float64(e-a)*math.Ceil(cl-1e-9)
					}
					// pred: the segment's first and last frames at the
					// range's width, the others as residuals against the
					// rounded lerp of those two (a width and a minimum
					// residual more per component).
					bits.predSeg += hdr + float64(nc)*(5+minBits)
					for j := range nc {
						w := format.BitsFor(int(hi[j] - lo[j]))
						n := e - a
						if n <= 2 {
							bits.predSeg += float64(n * w)
							continue
						}
						i0, i1 := idx[a][j], idx[e-1][j]
						rlo, rhi := int64(math.MaxInt64), int64(math.MinInt64)
						for f := a + 1; f < e-1; f++ {
							pr := (i0*int64(e-1-f) + i1*int64(f-a) + int64(n-1)/2) / int64(n-1)
							r := idx[f][j] - pr
							rlo, rhi = min(rlo, r), max(rhi, r)
						}
						bits.predSeg += float64(2*w) + 5 + float64(w+1) + float64((n-2)*format.BitsFor(int(rhi-rlo)))
					}
					for f := a; f < e; f++ {
						for j := range nc {
							st[j] = float32(idx[f][j]) * float32(step)
						}
						out[f] = rebuild(kind, modes[sg], st)
					}
					continue
				}
				// p2: width for the step over the range, then the finer
				// step range / (2^w - 1).
				wsum := 0
				var lo, sp [4]float64
				for j := range nc {
					l, h := clo[j], chi[j]
					if !clipRange {
						l, h = math.Inf(1), math.Inf(-1)
						for f := a; f < e; f++ {
							l, h = math.Min(l, comps[f][j]), math.Max(h, comps[f][j])
						}
					}
					l = math.Floor(l/step) * step // on the track's grid (stored as for step)
					w := format.BitsFor(int(math.Ceil((h - l) / step)))
					lo[j] = l
					if w > 0 {
						sp[j] = (h - l) / float64(int(1)<<w-1)
					}
					wsum += w
				}
				bits.intSeg += float64((e - a) * wsum)
				bits.intClip += float64((e - a) * wsum)
				for f := a; f < e; f++ {
					for j := range nc {
						x := lo[j]
						if sp[j] > 0 {
							x += math.Round((comps[f][j]-lo[j])/sp[j]) * sp[j]
						}
						st[j] = float32(x)
					}
					out[f] = rebuild(kind, modes[sg], st)
				}
			}
			if !p2 {
				// Clip-wide ranges on the grid.
				for j := range 4 {
					if cimax[j] >= cimin[j] {
						bits.intClip += 5 + absBits
						bits.fracClip += 5 + absBits
					}
				}
				for sg := range nseg {
					a, e := sg*L, min(F, sg*L+L)
					w, l := 0, 0.0
					for j := range ncs[sg] {
						w += format.BitsFor(int(cimax[j] - cimin[j]))
						l += math.Log2(float64(cimax[j] - cimin[j] + 1))
					}
					bits.intClip += float64((e - a) * w)
					bits.fracClip += float64(e-a) * math.Ceil(l-1e-9)
				}
			} else {
				bits.intClip += 4 * (5 + absBits)
			}
			dec[ti] = out
			if kind == TrackRotation {
				dm := make([]Quat, F)
				for f := range F {
					v := out[f]
					q := Quat{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}.Normalized()
					if p >= 0 {
						q = decModel[p][f].Mul(q)
					}
					dm[f] = q
				}
				decModel[b] = dm
			}
		}
		if decModel[b] == nil {
			// constant rotation: the default pose's
			d := cc.Default[b*anim.PoseFloats+4*int(TrackRotation):]
			q := Quat{float64(d[0]), float64(d[1]), float64(d[2]), float64(d[3])}.Normalized()
			dm := make([]Quat, F)
			for f := range F {
				dm[f] = q
				if p >= 0 {
					dm[f] = decModel[p][f].Mul(q)
				}
			}
			decModel[b] = dm
		}
	}
	return dec, bits
}

// rebuild is the decoded value of stored components a, as the curve
// codec's decoder rebuilds it (format.DecodePoint).
func rebuild(kind TrackKind, mode uint32, a [4]float32) [4]float32 {
	if kind != TrackRotation || mode == format.ModeAll {
		if kind != TrackRotation {
			a[3] = 0
		}
		return a
	}
	s := 1 - a[0]*a[0] - a[1]*a[1] - a[2]*a[2]
	var big float32
	if s > 0 {
		big = float32(math.Sqrt(float64(s)))
	}
	switch mode {
	case 0:
		return [4]float32{big, a[0], a[1], a[2]}
	case 1:
		return [4]float32{a[0], big, a[1], a[2]}
	case 2:
		return [4]float32{a[0], a[1], big, a[2]}
	}
	return [4]float32{a[0], a[1], a[2], big}
}

// measureDecoded measures decoded frames dec (nil: the default pose's
// constant) with measure, playing them back as a uniform decoder would:
// lerp between neighbouring frames, nlerp for rotations.
func measureDecoded(t *testing.T, sk *Skeleton, c *Clip, cc *CompressedClip, dec [][][4]float32, dist float64) ErrorStats {
	nb := sk.NumBones()
	st, err := measure(sk, c, func(tm float64, pose []float32) (float64, error) {
		x := tm * c.Rate
		f0 := max(0, min(c.Frames-2, int(math.Floor(x+1e-9))))
		u := float32(x - float64(f0))
		if c.Frames == 1 {
			f0, u = 0, 0
		}
		for b := range nb {
			var tv [3][4]float32
			for k := range 3 {
				d := dec[3*b+k]
				if d == nil {
					copy(tv[k][:], cc.Default[b*anim.PoseFloats+4*k:][:4])
					continue
				}
				v0, v1 := d[f0], d[min(f0+1, c.Frames-1)]
				if k == int(TrackRotation) && v0[0]*v1[0]+v0[1]*v1[1]+v0[2]*v1[2]+v0[3]*v1[3] < 0 {
					v1 = [4]float32{-v1[0], -v1[1], -v1[2], -v1[3]}
				}
				for j := range 4 {
					tv[k][j] = v0[j] + (v1[j]-v0[j])*u
				}
				if k == int(TrackRotation) {
					n := float32(math.Sqrt(float64(tv[k][0]*tv[k][0] + tv[k][1]*tv[k][1] + tv[k][2]*tv[k][2] + tv[k][3]*tv[k][3])))
					for j := range 4 {
						tv[k][j] /= n
					}
				}
			}
			o := pose[b*anim.PoseFloats:]
			copy(o[0:4], tv[TrackRotation][:])
			copy(o[4:7], tv[TrackTranslation][:3])
			o[7] = 0
			copy(o[8:11], tv[TrackScale][:3])
			o[11] = 0
		}
		return tm, nil
	}, true, []float64{dist})
	if err != nil {
		t.Fatal(err)
	}
	return st[0]
}
