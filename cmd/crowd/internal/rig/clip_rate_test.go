package rig

import (
	"path/filepath"
	"strings"
	"testing"
)

// A clip rate so low that resampling would keep one frame of a clip is
// refused naming the rate and the clip, not as "no duration".
func TestBuildClipRateTooLow(t *testing.T) {
	needCMU(t)
	opt := Options{Bones: 31, CacheDir: "off", Rate: 0.01, BVH: []string{filepath.Join(CMUDir, "01_01.bvh")}}
	_, err := Build(opt)
	if err == nil || !strings.Contains(err.Error(), "-clip-rate 0.01") {
		t.Fatalf("Build at 0.01 Hz: %v, want an error naming -clip-rate 0.01", err)
	}
}
