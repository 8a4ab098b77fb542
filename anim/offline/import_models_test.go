package offline_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim/offline"
)

// assimpModels lists the BVH and glTF files of Debian's assimp-testmodels
// (and the repository's own), or skips when none are installed.
func assimpModels(t *testing.T) []string {
	t.Helper()
	var files []string
	out, err := exec.Command("dpkg", "-L", "assimp-testmodels").Output()
	if err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			switch strings.ToLower(filepath.Ext(l)) {
			case ".bvh", ".gltf", ".glb":
				files = append(files, l)
			}
		}
	}
	for _, f := range []string{"cesium_man.gltf", "rigged_simple.gltf"} {
		files = append(files, filepath.Join("..", "..", "cmd", "crowd", "testdata", f))
	}
	return files
}

// TestImportEveryModel imports every BVH and glTF file available: each
// gives a skeleton that validates with clips that validate, or a
// *ParseError (or a documented error) naming the file; never a panic.
func TestImportEveryModel(t *testing.T) {
	for _, path := range assimpModels(t) {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		imp, err := offline.LoadFile(path, offline.ImportOptions{})
		if err != nil {
			var pe *offline.ParseError
			if !errors.As(err, &pe) {
				t.Errorf("%s: error is not a *ParseError: %T %v", path, err, err)
			}
			t.Logf("%s: %v", path, err)
			continue
		}
		if err := imp.Skeleton.Validate(); err != nil {
			t.Errorf("%s: imported skeleton invalid: %v", path, err)
			continue
		}
		for _, c := range imp.Clips {
			if err := c.Validate(imp.Skeleton); err != nil {
				t.Errorf("%s: clip %q invalid: %v", path, c.Name, err)
			}
		}
		t.Logf("%s: %d bones, %d clips, mesh %v, notes %q", path, imp.Skeleton.NumBones(), len(imp.Clips), imp.Mesh != nil, imp.Notes)
	}
}
