package anim_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// A cursor carried from a clip of one blob to the clip at the same offset
// of another blob (a hot-reloaded blob, or two blobs a program swaps) must
// not decode the new clip from the old one's stream state: the pose is
// the one a fresh cursor gives.
func TestCursorAcrossBlobs(t *testing.T) {
	withTimeout(t, 60*time.Second, func() {
		sk, c := animtest.Chain(6, 61, 30)
		_, c2 := animtest.Chain(6, 61, 30) // another clip of the same skeleton: the bones bend the other way
		for i := 1; i < len(c2.Tracks); i += 3 {
			for f, v := range c2.Tracks[i].Values {
				c2.Tracks[i].Values[f] = [4]float64{-v[0], -v[1], -v[2], v[3]}
			}
		}
		_, a := animtest.Blob(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
		_, b := animtest.Blob(t, sk, rvCompress(t, sk, c2, anim.CodecCurve))
		if a.Offset() != b.Offset() {
			t.Skipf("clips at offsets %d and %d: not the shape under test", a.Offset(), b.Offset())
		}
		cur := make([]uint32, max(a.CursorWords(), b.CursorWords()))
		pose := make([]kernels.Transform, a.Bones())
		bad, worst := 0, 0.0
		for i := range 60 {
			tm := float32(i) / 30
			if err := a.Sample(tm, cur, pose); err != nil {
				t.Fatal(err)
			}
			if err := b.Sample(tm+0.01, cur, pose); err != nil {
				t.Fatal(err)
			}
			if want := rvFresh(t, b, tm+0.01); !rvEqual(pose, want) {
				bad++
				for k := range pose {
					for a := range 4 {
						worst = max(worst, math.Abs(float64(pose[k].Rot[a]-want[k].Rot[a])))
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("a cursor from blob A used on blob B's clip at the same offset: %d of 60 poses differ from a fresh cursor's (rotation components off by up to %.3g)", bad, worst)
		}
	})
}

// Two concatenations of blobs that share their first blob (a program that
// reloads the blobs after the first, or swaps them) hold different clips
// at the same offset: a cursor carried from one to the other re-seeks, as
// it does between two single blobs, because its identity is the clip's
// own checksum, not the first blob's.
func TestCursorAcrossConcatenationsSharingTheirFirstBlob(t *testing.T) {
	withTimeout(t, 60*time.Second, func() {
		sk, c := animtest.Chain(6, 61, 30)
		_, c2 := animtest.Chain(6, 61, 30)
		for i := 1; i < len(c2.Tracks); i += 3 {
			for f, v := range c2.Tracks[i].Values {
				c2.Tracks[i].Values[f] = [4]float64{-v[0], -v[1], -v[2], v[3]}
			}
		}
		first := blobBytes(t, sk, rvCompress(t, sk, c, anim.CodecUniform))
		a, b := blobBytes(t, sk, rvCompress(t, sk, c, anim.CodecCurve)), blobBytes(t, sk, rvCompress(t, sk, c2, anim.CodecCurve))
		la, err := anim.Load(append(append([]byte(nil), first...), a...))
		if err != nil {
			t.Fatal(err)
		}
		lb, err := anim.Load(append(append([]byte(nil), first...), b...))
		if err != nil {
			t.Fatal(err)
		}
		ca, cb := la.Clip(1), lb.Clip(1)
		if ca.Offset() != cb.Offset() {
			t.Skipf("clips at offsets %d and %d: not the shape under test", ca.Offset(), cb.Offset())
		}
		cur := make([]uint32, max(ca.CursorWords(), cb.CursorWords()))
		pose := make([]kernels.Transform, ca.Bones())
		bad := 0
		for i := range 60 {
			tm := float32(i) / 30
			if err := ca.Sample(tm, cur, pose); err != nil {
				t.Fatal(err)
			}
			if err := cb.Sample(tm+0.01, cur, pose); err != nil {
				t.Fatal(err)
			}
			if !rvEqual(pose, rvFresh(t, cb, tm+0.01)) {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("a cursor carried between two concatenations sharing their first blob: %d of 60 poses differ from a fresh cursor's", bad)
		}
	})
}

// A curve clip's identity word is checked by Load (a blob whose identity
// does not match its clip's bytes is refused, naming the word), and a
// clip written without one (0: blobs built before it) still loads and
// samples, its cursors keyed to the first blob's checksum as before.
func TestClipIdentityCheckedByLoad(t *testing.T) {
	sk, c := animtest.Chain(4, 31, 30)
	data := blobBytes(t, sk, rvCompress(t, sk, c, anim.CodecCurve))
	bl, err := anim.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	cv := bl.Clip(0)
	want := rvFresh(t, cv, 0.4)
	at := int(cv.Offset()) + 4*22
	if binary.LittleEndian.Uint32(data[at:]) == 0 {
		t.Fatal("the builder wrote no identity for a curve clip")
	}
	resum := func(d []byte) []byte {
		binary.LittleEndian.PutUint32(d[12:], crc32.Checksum(d[16:], crc32.MakeTable(crc32.Castagnoli)))
		return d
	}
	wrong := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(wrong[at:], binary.LittleEndian.Uint32(wrong[at:])^1)
	var be *anim.BlobError
	if _, err := anim.Load(resum(wrong)); !errors.As(err, &be) || be.Offset != at || !strings.Contains(err.Error(), "identity") {
		t.Errorf("Load of a clip whose identity does not match its bytes: %v, want a *BlobError at %d naming the identity", err, at)
	}
	old := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(old[at:], 0)
	ob, err := anim.Load(resum(old))
	if err != nil {
		t.Fatalf("Load of a clip without an identity: %v", err)
	}
	cur := make([]uint32, ob.Clip(0).CursorWords())
	pose := make([]kernels.Transform, ob.Clip(0).Bones())
	if err := ob.Clip(0).Sample(0.4, cur, pose); err != nil {
		t.Fatal(err)
	}
	if !rvEqual(pose, want) {
		t.Error("a clip without an identity samples other poses")
	}
	if cur[5] != binary.LittleEndian.Uint32(old[12:]) {
		t.Errorf("cursor word 5 is %#x for a clip without an identity, want the blob's checksum %#x", cur[5], binary.LittleEndian.Uint32(old[12:]))
	}
	// Uniform clips keep no cursor state: their word 22 stays reserved.
	uni := blobBytes(t, sk, rvCompress(t, sk, c, anim.CodecUniform))
	ub, err := anim.Load(uni)
	if err != nil {
		t.Fatal(err)
	}
	uat := int(ub.Clip(0).Offset()) + 4*22
	if binary.LittleEndian.Uint32(uni[uat:]) != 0 {
		t.Error("the builder wrote an identity for a uniform clip")
	}
	binary.LittleEndian.PutUint32(uni[uat:], 7)
	if _, err := anim.Load(resum(uni)); !errors.As(err, &be) || be.Offset != uat {
		t.Errorf("Load of a uniform clip with word 22 set: %v, want a *BlobError at %d", err, uat)
	}
}

// blobBytes builds a one-skeleton blob of the given clips.
func blobBytes(t testing.TB, sk *offline.Skeleton, clips ...*offline.CompressedClip) []byte {
	t.Helper()
	var b offline.Builder
	s := b.AddSkeleton(sk)
	for _, c := range clips {
		if err := b.AddClip(s, c); err != nil {
			t.Fatal(err)
		}
	}
	data, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return data
}
