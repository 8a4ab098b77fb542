package render

import (
	"fmt"
)

// Pipeline describes a registered pipeline. The render package only checks
// that draws name registered pipelines; the backend keeps the real objects
// in its own table indexed by PipelineID.
type Pipeline struct {
	Name string
}

// Mesh describes a registered mesh: how many vertices it has and, if it is
// indexed, how many indices. Draws are checked against these counts.
type Mesh struct {
	Name     string
	Vertices uint32
	Indices  uint32 // 0: not indexed
}

// Registry is the set of handles the caller knows: draws naming anything
// else are dropped and reported by MergeSort. Build it before the frame;
// it is read concurrently during MergeSort and must not change meanwhile.
// The zero value is an empty registry.
type Registry struct {
	pipelines []Pipeline // PipelineID i is pipelines[i-1]
	meshes    []Mesh     // MeshID i is meshes[i-1]
	instances uint32
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// MaxPipelines is how many pipelines a Registry holds: every PipelineID
// fits the sort key's pipeline field.
const MaxPipelines = MaxKeyPipeline

// AddPipeline registers p and returns its ID (1, 2, ...).
func (g *Registry) AddPipeline(p Pipeline) (PipelineID, error) {
	if len(g.pipelines) >= MaxPipelines {
		return 0, fmt.Errorf("render: AddPipeline %q: registry full (%d pipelines)", p.Name, MaxPipelines)
	}
	g.pipelines = append(g.pipelines, p)
	return PipelineID(len(g.pipelines)), nil
}

// AddMesh registers m and returns its ID (1, 2, ...).
func (g *Registry) AddMesh(m Mesh) (MeshID, error) {
	if len(g.meshes) >= 1<<31 {
		return 0, fmt.Errorf("render: AddMesh %q: registry full", m.Name)
	}
	g.meshes = append(g.meshes, m)
	return MeshID(len(g.meshes)), nil
}

// SetInstances bounds instance indices: a draw is valid only if
// Instance+InstanceCount <= n (for example the number of characters whose
// bone palettes exist). 0 disables the check.
func (g *Registry) SetInstances(n uint32) { g.instances = n }

// Pipeline returns the pipeline registered as id.
func (g *Registry) Pipeline(id PipelineID) (Pipeline, bool) {
	if id == 0 || uint64(id) > uint64(len(g.pipelines)) {
		return Pipeline{}, false
	}
	return g.pipelines[id-1], true
}

// Mesh returns the mesh registered as id.
func (g *Registry) Mesh(id MeshID) (Mesh, bool) {
	if id == 0 || uint64(id) > uint64(len(g.meshes)) {
		return Mesh{}, false
	}
	return g.meshes[id-1], true
}

// Pipelines returns how many pipelines are registered.
func (g *Registry) Pipelines() int { return len(g.pipelines) }

// Meshes returns how many meshes are registered.
func (g *Registry) Meshes() int { return len(g.meshes) }

// checkDraw validates a draw against the registry. When the draw is
// invalid it describes why in *p (Kind, Field, Value, Limit; see Problem)
// and returns false.
func (g *Registry) checkDraw(d *DrawPacket, p *Problem) bool {
	if d.Pipeline == 0 || uint64(d.Pipeline) > uint64(len(g.pipelines)) {
		*p = Problem{Kind: ErrUnknownPipeline, Field: "pipeline", Value: uint64(d.Pipeline), Limit: uint64(len(g.pipelines))}
		return false
	}
	if d.Mesh == 0 || uint64(d.Mesh) > uint64(len(g.meshes)) {
		*p = Problem{Kind: ErrUnknownMesh, Field: "mesh", Value: uint64(d.Mesh), Limit: uint64(len(g.meshes))}
		return false
	}
	if d.VertexCount == 0 || d.InstanceCount == 0 {
		*p = Problem{Kind: ErrEmptyDraw, Field: "counts", Value: uint64(d.VertexCount), Limit: uint64(d.InstanceCount)}
		return false
	}
	m := &g.meshes[d.Mesh-1]
	limit, what := m.Vertices, "vertices"
	if m.Indices > 0 {
		limit, what = m.Indices, "indices"
	}
	if end := uint64(d.FirstVertex) + uint64(d.VertexCount); end > uint64(limit) {
		*p = Problem{Kind: ErrDrawRange, Field: what, Value: end, Limit: uint64(limit)}
		return false
	}
	if g.instances > 0 {
		if end := uint64(d.Instance) + uint64(d.InstanceCount); end > uint64(g.instances) {
			*p = Problem{Kind: ErrInstanceRange, Field: "instances", Value: end, Limit: uint64(g.instances)}
			return false
		}
	}
	return true
}

// checkState validates a state packet like checkDraw.
func checkState(s *StatePacket, p *Problem) bool {
	if s.Kind >= NumStates {
		*p = Problem{Kind: ErrBadState, Field: "kind", Value: uint64(s.Kind), Limit: uint64(NumStates)}
		return false
	}
	for i, name := range [2]string{"width", "height"} {
		if v := s.Rect[2+i]; v < 0 {
			*p = Problem{Kind: ErrBadState, Field: name, Value: uint64(int64(v))}
			return false
		}
	}
	return true
}
