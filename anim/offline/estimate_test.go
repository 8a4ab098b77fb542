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

// TestCodecEstimate is a measurement, not a check (set
// VKJOBS_ANIM_ESTIMATE=1 to run it, about a minute): before building a
// variant of the uniform codec it estimates, on ACL's comparison clips at
// their own rate and at 30 Hz, what the variant's stream would take,
// starting from the uniform codec's real stream (its bit rates, ranges
// and quantised integers, so the error is the uniform codec's):
//
//   - keyed: per segment and animated track, a mask of the kept frames
//     (segment ends always kept; 1 flag bit, plus sf-2 mask bits when a
//     frame is dropped) and the kept frames' values at the track's width.
//     A frame is dropped (greedy, left to right) when the lerp (rotations:
//     nlerp) of the neighbouring kept source samples stays within a
//     per-track bound at every source sample in between. "keyed-ub" is an
//     upper bound on what can be dropped: the whole Tolerance for the
//     track alone, at its own bone's virtual vertices (VertexDistance),
//     ignoring descendants, quantisation and the chain. "keyed" gives
//     the track 0.47 of Tolerance at its reach (the farthest vertex of
//     its subtree), as the curve codec's open-loop fit does.
//   - hier: lossless, frame-addressable: per segment, track and
//     component, the first and last integers at the track's width, the
//     others predicted by binary subdivision (the rounded lerp of the
//     interval's ends) and stored as residuals at a width per track and
//     level (5 bits each); decoding a frame reads one residual per level.
//   - delta: lossless, sequential: first differences Rice-coded with the
//     best parameter per segment, track and component (what entropy
//     coding in playback order can reach from the same integers).
func TestCodecEstimate(t *testing.T) {
	if os.Getenv("VKJOBS_ANIM_ESTIMATE") == "" {
		t.Skip("a measurement: set VKJOBS_ANIM_ESTIMATE=1")
	}
	acl := map[string]float64{"01_01@0": 13.57, "01_01@30": 11.57, "01_03@0": 13.16, "01_03@30": 11.63,
		"Boxing_Toes@0": 9.84, "Boxing_Toes@30": 8.75}
	var out strings.Builder
	fmt.Fprintf(&out, "%-16s %7s %7s | %6s %6s %6s %6s %6s | kept: %5s %5s | %s\n", "clip@Hz", "ACL", "uniform",
		"keyedU", "keyed", "hier", "fordlt", "delta", "ub", "real", "frame bits / record")
	for _, name := range []string{"01_01", "01_03", "Boxing_Toes"} {
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
			opt := CompressOptions{Codec: anim.CodecUniform}
			cc, err := Compress(im.Skeleton, c, opt)
			if err != nil {
				t.Fatal(err)
			}
			opt.defaults()
			e := estimateUniform(im.Skeleton, c, cc, &opt)
			raw := float64(cc.Stats.RawBytes)
			base := float64(cc.Stats.Bytes)
			r := func(bits float64) float64 { return raw / (base + (bits-e.data)/8) }
			key := fmt.Sprintf("%s@%g", name, hz)
			a := acl[key]
			fmt.Fprintf(&out, "%-16s %7.2f %7.2f | %6.2f %6.2f %6.2f %6.2f %6.2f | %5.1f%% %5.1f%% | %4.1f%%  (x ACL: uniform %.2f keyedU %.2f keyed %.2f hier %.2f fordlt %.2f delta %.2f)\n",
				fmt.Sprintf("%s@%g", name, c.Rate), a, raw/base, r(e.keyedUB), r(e.keyed), r(e.hier), r(e.forDelta), r(e.delta),
				100*e.keptUB/e.frames, 100*e.kept/e.frames, 100*e.data/8/base,
				raw/base/a, r(e.keyedUB)/a, r(e.keyed)/a, r(e.hier)/a, r(e.forDelta)/a, r(e.delta)/a)
		}
	}
	t.Log("\n" + out.String())
}

type uniformEstimate struct {
	data                        float64 // the uniform stream's frame bits
	keyedUB, keyed, hier, delta float64 // the variants' bits for the same
	forDelta                    float64 // deltas at a fixed width per segment, track and component
	frames, keptUB, kept        float64 // (track, frame) samples with frame bits; kept of them
}

func estimateUniform(sk *Skeleton, c *Clip, cc *CompressedClip, opt *CompressOptions) uniformEstimate {
	var e uniformEstimate
	nt := len(cc.uniTracks)
	L := cc.SegFrames
	lv := leverArms(sk, c, opt.VertexDistance)
	byteAt := func(k uint32) uint32 { return cc.stream[k/4] >> (8 * (k % 4)) & 0xff }
	q := make([][3]int64, L)
	for s := range cc.numSegments() {
		seg := cc.segBits[s]
		sf := min(L, c.Frames-s*L)
		pos := seg + uint32(format.UniformHeaderBytes(nt))*8
		// Frame data: per frame, per track with bits, three components.
		vals := make([][][3]int64, nt)
		for range sf {
			for i := range nt {
				n := format.UniformLadder[byteAt(seg/8+4+uint32(i))&15]
				if n == 0 {
					continue
				}
				var v [3]int64
				for k := range 3 {
					v[k] = int64(format.ReadBits(cc.stream, pos, n))
					pos += n
				}
				vals[i] = append(vals[i], v)
			}
		}
		for i := range nt {
			n := int(format.UniformLadder[byteAt(seg/8+4+uint32(i))&15])
			if n == 0 {
				continue
			}
			copy(q, vals[i])
			e.data += float64(3 * n * sf)
			e.frames += float64(sf)
			e.hier += hierBits(q[:sf], n)
			e.delta += deltaBits(q[:sf], n)
			e.forDelta += forDeltaBits(q[:sf], n)
			bone, kind := int(cc.uniTracks[i]&0xffff), TrackKind(cc.uniTracks[i]>>16)
			tr := &c.Tracks[bone*3+int(kind)]
			src := make([][4]float64, sf)
			for fi := range sf {
				src[fi] = tr.Values[tr.sampleIndex(s*L+fi)]
			}
			kub := keptFrames(src, kind, opt.Tolerance, opt.VertexDistance)
			kre := keptFrames(src, kind, 0.47*opt.Tolerance, lv.reach[bone])
			e.keptUB += float64(kub)
			e.kept += float64(kre)
			mask := func(k int) float64 {
				if k == sf {
					return 1
				}
				return float64(1 + sf - 2)
			}
			e.keyedUB += float64(3*n*kub) + mask(kub)
			e.keyed += float64(3*n*kre) + mask(kre)
		}
	}
	return e
}

// keptFrames returns how many of the samples v a greedy left-to-right
// removal keeps, the ends always kept, when every removed sample must be
// within tol of the interpolation of its kept neighbours at a lever of d
// metres (translations: the displacement itself).
func keptFrames(v [][4]float64, kind TrackKind, tol, d float64) int {
	n := len(v)
	if n <= 2 {
		return n
	}
	errAt := func(a, b, k int) float64 {
		u := float64(k-a) / float64(b-a)
		x := lerpValue(kind, v[a], v[b], u)
		switch kind {
		case TrackRotation:
			p := Quat(x)
			if p.Dot(Quat(v[k])) < 0 {
				p = p.Neg()
			}
			dq := Quat(v[k]).Conj().Mul(p.Normalized())
			return 2 * math.Sqrt(dq[0]*dq[0]+dq[1]*dq[1]+dq[2]*dq[2]) * d
		case TrackScale:
			return math.Sqrt(sq(x[0]-v[k][0])+sq(x[1]-v[k][1])+sq(x[2]-v[k][2])) * d
		}
		return math.Sqrt(sq(x[0]-v[k][0]) + sq(x[1]-v[k][1]) + sq(x[2]-v[k][2]))
	}
	kept := 1
	a := 0
	for b := 2; b <= n; b++ {
		// Can every sample strictly between a and b be dropped?
		ok := b < n
		for k := a + 1; ok && k < b; k++ {
			ok = errAt(a, b, k) <= tol
		}
		if !ok {
			kept++ // b-1 is kept
			a = b - 1
		}
	}
	return kept
}

func sq(x float64) float64 { return x * x }

func zz(r int64) uint64 {
	if r < 0 {
		return uint64(-2*r - 1)
	}
	return uint64(2 * r)
}

// hierBits is the binary-subdivision residual coding of q (n-bit
// components): the ends raw, then a width per level.
func hierBits(q [][3]int64, n int) float64 {
	sf := len(q)
	if sf <= 2 {
		return float64(3 * n * sf)
	}
	var maxz [8]uint64
	var count [8]int
	var rec func(a, b, lvl int)
	rec = func(a, b, lvl int) {
		if b-a < 2 {
			return
		}
		m := (a + b) / 2
		for k := range 3 {
			p := (q[a][k]*int64(b-m) + q[b][k]*int64(m-a) + int64(b-a)/2) / int64(b-a)
			maxz[lvl] = max(maxz[lvl], zz(q[m][k]-p))
		}
		count[lvl]++
		rec(a, m, lvl+1)
		rec(m, b, lvl+1)
	}
	rec(0, sf-1, 0)
	bits := float64(3 * n * 2)
	for l := range maxz {
		if count[l] > 0 {
			w := min(format.BitsFor(int(maxz[l])), n+1)
			bits += 5 + float64(3*w*count[l])
		}
	}
	return bits
}

// deltaBits Rice-codes first differences with the best parameter per
// component (5 bits each), the first value raw.
func deltaBits(q [][3]int64, n int) float64 {
	bits := float64(3 * n)
	for k := range 3 {
		us := make([]uint32, 0, len(q))
		for f := 1; f < len(q); f++ {
			us = append(us, uint32(zz(q[f][k]-q[f-1][k])))
		}
		if len(us) > 0 {
			_, tot := format.BestRiceK(us, 20)
			bits += 5 + float64(tot)
		}
	}
	return bits
}

// forDeltaBits stores first differences at one width per component
// (5 bits each), the first value raw.
func forDeltaBits(q [][3]int64, n int) float64 {
	bits := float64(3 * n)
	for k := range 3 {
		var m uint64
		for f := 1; f < len(q); f++ {
			m = max(m, zz(q[f][k]-q[f-1][k]))
		}
		if len(q) > 1 {
			bits += 5 + float64(min(format.BitsFor(int(m)), n+1)*(len(q)-1))
		}
	}
	return bits
}
