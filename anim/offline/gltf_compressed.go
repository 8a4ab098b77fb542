package offline

import (
	"encoding/json"
	"fmt"
	"strings"
)

// gltfMeshCompression lists the extensions that compress mesh geometry,
// which the importer does not decode. A file that only uses them
// (extensionsUsed) still gives its skeleton and clips: Import.MeshErr
// says why there is no mesh. A file that requires them is refused whole
// (checkExtensions).
var gltfMeshCompression = []string{"KHR_draco_mesh_compression", "EXT_meshopt_compression", "KHR_meshopt_compression"}

// checkVersion refuses a file whose asset.version is not 2.x before the
// glTF 2.0 decoder reads it: a glTF 1.0 file (objects where 2.0 has
// arrays) would otherwise fail with a JSON type error that says nothing
// about the version. A file without a readable asset.version is left to
// the decoder.
func (g *gltfReader) checkVersion(jsonData []byte) error {
	var head struct {
		Asset struct {
			Version json.RawMessage `json:"version"`
		} `json:"asset"`
	}
	if json.Unmarshal(jsonData, &head) != nil || head.Asset.Version == nil {
		return nil
	}
	v := strings.Trim(string(head.Asset.Version), `" `)
	if strings.HasPrefix(v, "2.") || v == "2" {
		return nil
	}
	return g.errf("asset.version", "glTF %s is not supported (asset.version %s): this importer reads glTF 2.0 (convert the file, e.g. with gltf-pipeline or Blender)", v, head.Asset.Version)
}

// meshCompressed returns an error naming the element and the extension
// when the mesh skin si deforms has geometry compressed by one of
// gltfMeshCompression (a primitive's extension, or a bufferView of one of
// its accessors), or nil.
func (g *gltfReader) meshCompressed(si int) error {
	doc := &g.doc
	for _, n := range doc.Nodes {
		if n == nil || n.Skin == nil || *n.Skin != si || n.Mesh == nil {
			continue
		}
		mi := *n.Mesh
		if mi < 0 || mi >= len(doc.Meshes) || doc.Meshes[mi] == nil {
			return nil // g.mesh reports it
		}
		for pi, p := range doc.Meshes[mi].Primitives {
			if p == nil {
				continue
			}
			elem := fmt.Sprintf("meshes[%d].primitives[%d]", mi, pi)
			for _, e := range gltfMeshCompression {
				if _, ok := p.Extensions[e]; ok {
					return g.meshCompressedErr(elem, e)
				}
			}
			accs := make([]int, 0, len(p.Attributes)+1)
			for _, a := range p.Attributes {
				accs = append(accs, a)
			}
			if p.Indices != nil {
				accs = append(accs, *p.Indices)
			}
			for _, ai := range accs {
				if ai < 0 || ai >= len(doc.Accessors) || doc.Accessors[ai] == nil || doc.Accessors[ai].BufferView == nil {
					continue
				}
				bv := *doc.Accessors[ai].BufferView
				if bv < 0 || bv >= len(doc.BufferViews) || doc.BufferViews[bv] == nil {
					continue
				}
				for _, e := range gltfMeshCompression {
					if _, ok := doc.BufferViews[bv].Extensions[e]; ok {
						return g.meshCompressedErr(fmt.Sprintf("%s (bufferViews[%d])", elem, bv), e)
					}
				}
			}
		}
		return nil
	}
	return nil
}

func (g *gltfReader) meshCompressedErr(elem, ext string) error {
	return g.errf(elem, "the mesh is compressed with %s, which this importer does not decode: no mesh imported (the skeleton and clips are); export the file without mesh compression to get it", ext)
}
