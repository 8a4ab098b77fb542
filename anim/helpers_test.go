package anim

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sync"
	"testing"
)

const assimpBVH = "/usr/share/assimp/models/BVH"

// needAssimp fails the test when Debian's assimp-testmodels is missing.
func needAssimp(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		tb.Fatalf("%s is missing: install assimp-testmodels (apt-get install assimp-testmodels)", path)
	} else if err != nil {
		tb.Fatal(err)
	}
}

var cmu struct {
	once sync.Once
	ims  []*Import
	ccs  []*CompressedClip
	data []byte
	err  error
}

// cmuData imports and compresses the two CMU clips once per test binary.
func cmuData(tb testing.TB) ([]*Import, []*CompressedClip, []byte) {
	tb.Helper()
	needAssimp(tb, assimpBVH+"/01_01.bvh")
	needAssimp(tb, assimpBVH+"/01_03.bvh")
	cmu.once.Do(func() {
		var b Builder
		for _, f := range []string{"01_01", "01_03"} {
			im, err := LoadFile(assimpBVH+"/"+f+".bvh", ImportOptions{})
			if err != nil {
				cmu.err = err
				return
			}
			ev, err := DetectFootContacts(im.Skeleton, im.Clips[0], ContactOptions{})
			if err != nil {
				cmu.err = err
				return
			}
			im.Clips[0].Events = ev
			cc, err := Compress(im.Skeleton, im.Clips[0], CompressOptions{})
			if err != nil {
				cmu.err = err
				return
			}
			if err := b.AddClip(b.AddSkeleton(im.Skeleton), cc); err != nil {
				cmu.err = err
				return
			}
			cmu.ims = append(cmu.ims, im)
			cmu.ccs = append(cmu.ccs, cc)
		}
		cmu.data, cmu.err = b.Bytes()
	})
	if cmu.err != nil {
		tb.Fatal(cmu.err)
	}
	return cmu.ims, cmu.ccs, cmu.data
}

func cmuBlob(tb testing.TB) *Blob {
	_, _, data := cmuData(tb)
	bl, err := Load(data)
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}

var cmuAt sync.Map // "codec:cm@Hz" -> []byte

// cmuBlobAt compresses the CMU clips at another error target (cm),
// resampled to hz first when hz > 0.
func cmuBlobAt(tb testing.TB, cm string, hz float64) *Blob {
	return cmuBlobCodec(tb, cm, hz, CodecCurve)
}

// cmuBlobCodec is cmuBlobAt with the given codec.
func cmuBlobCodec(tb testing.TB, cm string, hz float64, codec Codec) *Blob {
	ims, _, _ := cmuData(tb)
	key := fmt.Sprintf("%v:%s@%g", codec, cm, hz)
	data, ok := cmuAt.Load(key)
	if !ok {
		var tol float64
		if _, err := fmt.Sscan(cm, &tol); err != nil {
			tb.Fatal(err)
		}
		var b Builder
		for _, im := range ims {
			c := im.Clips[0]
			if hz > 0 {
				var err error
				if c, err = c.Resample(hz); err != nil {
					tb.Fatal(err)
				}
			}
			cc, err := Compress(im.Skeleton, c, CompressOptions{Tolerance: tol / 100, Codec: codec})
			if err != nil {
				tb.Fatal(err)
			}
			if err := b.AddClip(b.AddSkeleton(im.Skeleton), cc); err != nil {
				tb.Fatal(err)
			}
		}
		d, err := b.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		cmuAt.Store(key, d)
		data = d
	}
	bl, err := Load(data.([]byte))
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}

// synthSkeleton is a 4-bone chain: root, spine (0.5 m up), arm (0.3 m
// along x), hand (0.2 m along x).
func synthSkeleton() *Skeleton {
	return &Skeleton{
		Name:    "synth",
		Names:   []string{"root", "spine", "arm", "hand"},
		Parents: []int32{-1, 0, 1, 2},
		Rest: []Transform{
			{T: Vec3{0, 1, 0}, R: IdentityQuat, S: Vec3{1, 1, 1}},
			{T: Vec3{0, 0.5, 0}, R: IdentityQuat, S: Vec3{1, 1, 1}},
			{T: Vec3{0.3, 0, 0}, R: IdentityQuat, S: Vec3{1, 1, 1}},
			{T: Vec3{0.2, 0, 0}, R: IdentityQuat, S: Vec3{1, 1, 1}},
		},
	}
}

// synthClip animates synthSkeleton for frames samples at rate Hz: the
// root walks and bobs, the spine and arm swing, the hand holds still; with
// jump set, the root's x translation jumps by 0.5 m at frame jump (a
// discontinuity) and the arm's rotation flips by 90° there.
func synthClip(frames int, rate float64, jump int) *Clip {
	c := &Clip{Name: "synth", Rate: rate, Frames: frames, Tracks: make([]Track, 12)}
	sk := synthSkeleton()
	for b := range 4 {
		for k := range 3 {
			tr := Track{}
			for f := range frames {
				t := float64(f) / rate
				v := [4]float64{}
				switch TrackKind(k) {
				case TrackTranslation:
					v = vec4(sk.Rest[b].T)
					if b == 0 {
						v[0] = 0.8 * t
						v[1] = 1 + 0.05*math.Sin(2*math.Pi*2*t)
						if jump > 0 && f >= jump {
							v[0] += 0.5
						}
					}
				case TrackRotation:
					q := IdentityQuat
					switch b {
					case 1:
						q = axisAngle(2, 0.3*math.Sin(2*math.Pi*t))
					case 2:
						q = axisAngle(1, 1.2*math.Sin(2*math.Pi*0.7*t)).mul(axisAngle(0, 0.4*t))
						if jump > 0 && f >= jump {
							q = axisAngle(2, math.Pi/2).mul(q)
						}
					}
					v = [4]float64(q)
				case TrackScale:
					v = [4]float64{1, 1, 1, 0}
				}
				if jump > 0 && f == jump && ((b == 0 && k == 0) || (b == 2 && k == 1)) {
					// left-hand limit first: the value the motion had
					// reached just before the jump
					left := v
					if k == 0 {
						left[0] -= 0.5
					} else {
						left = [4]float64(axisAngle(2, -math.Pi/2).mul(Quat(v)))
					}
					tr.Frames = append(tr.Frames, int32(f))
					tr.Values = append(tr.Values, left)
				}
				tr.Frames = append(tr.Frames, int32(f))
				tr.Values = append(tr.Values, v)
			}
			if TrackKind(k) == TrackRotation {
				makeContinuous(&tr)
			}
			c.Tracks[b*3+k] = tr
		}
	}
	return c
}

// synthBlob compresses a synthetic clip into a blob.
func synthBlob(tb testing.TB, c *Clip, opt CompressOptions) (*CompressedClip, []byte) {
	tb.Helper()
	sk := synthSkeleton()
	cc, err := Compress(sk, c, opt)
	if err != nil {
		tb.Fatal(err)
	}
	var b Builder
	if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
		tb.Fatal(err)
	}
	data, err := b.Bytes()
	if err != nil {
		tb.Fatal(err)
	}
	return cc, data
}

// sampleAt samples one character of clip c at time t with a fresh cursor.
func sampleAt(tb testing.TB, c ClipView, t float32) []float32 {
	tb.Helper()
	j := SampleJob{Blob: c.b, Inputs: []SampleInput{{c.Offset(), t}}, Cursors: make([]uint32, c.CursorWords()),
		CursorStride: c.CursorWords(), Poses: make([]float32, c.Bones()*PoseFloats), Bones: c.Bones()}
	if err := j.Run(); err != nil {
		tb.Fatal(err)
	}
	return j.Poses
}
