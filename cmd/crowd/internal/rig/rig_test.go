package rig

import (
	"testing"
	"time"
)

func TestBuildScratch(t *testing.T) {
	t0 := time.Now()
	r, err := Build(Options{Bones: 90, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: %s bones %d src %d verts %d idx %d clips %+v stride %d h %.2f rad %.2f chains %v notes %v", time.Since(t0), r.Source, r.Bones, r.SourceBones, len(r.Mesh.Vertices), len(r.Mesh.Indices), r.Clips, r.CursorStride, r.Height, r.Radius, r.Chains, r.Notes)
	for b := range r.Bones {
		t.Logf("%d %s p=%d %v", b, r.Names[b], r.Parents[b], r.RestModel[b][12:15])
	}
}
