package anim

import (
	"errors"
	"fmt"
	"io/fs"
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

var cmuAt sync.Map // error target in cm -> []byte

// cmuBlobAt compresses the CMU clips at another error target (cm).
func cmuBlobAt(tb testing.TB, cm string) *Blob {
	ims, _, _ := cmuData(tb)
	data, ok := cmuAt.Load(cm)
	if !ok {
		var tol float64
		if _, err := fmt.Sscan(cm, &tol); err != nil {
			tb.Fatal(err)
		}
		var b Builder
		for _, im := range ims {
			cc, err := Compress(im.Skeleton, im.Clips[0], CompressOptions{Tolerance: tol / 100})
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
		cmuAt.Store(cm, d)
		data = d
	}
	bl, err := Load(data.([]byte))
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}
