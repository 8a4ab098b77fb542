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

// checkDraw validates a draw against the registry. It returns the offending
// value and the sentinel describing the problem, or nil.
func (g *Registry) checkDraw(d *DrawPacket) (uint64, error) {
	if d.Pipeline == 0 || uint64(d.Pipeline) > uint64(len(g.pipelines)) {
		return uint64(d.Pipeline), ErrUnknownPipeline
	}
	if d.Mesh == 0 || uint64(d.Mesh) > uint64(len(g.meshes)) {
		return uint64(d.Mesh), ErrUnknownMesh
	}
	if d.VertexCount == 0 || d.InstanceCount == 0 {
		return uint64(d.VertexCount)<<32 | uint64(d.InstanceCount), ErrEmptyDraw
	}
	m := &g.meshes[d.Mesh-1]
	limit := m.Vertices
	if m.Indices > 0 {
		limit = m.Indices
	}
	if end := uint64(d.FirstVertex) + uint64(d.VertexCount); end > uint64(limit) {
		return end, ErrDrawRange
	}
	if g.instances > 0 {
		if end := uint64(d.Instance) + uint64(d.InstanceCount); end > uint64(g.instances) {
			return end, ErrInstanceRange
		}
	}
	return 0, nil
}

// checkState validates a state packet.
func checkState(s *StatePacket) (uint64, error) {
	if s.Kind >= NumStates {
		return uint64(s.Kind), ErrBadState
	}
	if s.Rect[2] < 0 || s.Rect[3] < 0 {
		return uint64(uint32(s.Rect[2]))<<32 | uint64(uint32(s.Rect[3])), ErrBadState
	}
	return 0, nil
}
