package render

import (
	"unsafe"

	"github.com/vkjobs/vkjobs/evstream"
)

// Packet types of a RenderContext's stream. Each payload is one of the
// structs below, whose first field is its SortKey. Types 4..FirstAppType-1
// are reserved for future render packets; applications may add their own
// types from FirstAppType up (debug markers, profiler scopes): the merge
// skips and counts types it does not know (Stats.Unknown), like any
// evstream consumer.
const (
	TypeDraw  evstream.Type = 1
	TypeState evstream.Type = 2
	TypeJob   evstream.Type = 3

	FirstAppType evstream.Type = 1024
)

// PipelineID names a graphics pipeline (shaders plus fixed-function state,
// or a material) registered in a Registry. 0 is invalid.
type PipelineID uint32

// MeshID names a mesh (vertex and optional index buffers) registered in a
// Registry. 0 is invalid.
type MeshID uint32

// DrawPacket is one draw call. It is plain data (no pointers) so that it
// lives in a stream's bytes and is read in place.
//
// A Vulkan recorder maps it to: vkCmdBindPipeline(Pipeline) and
// vkCmdBindVertexBuffers/IndexBuffer(Mesh) when they change (the display
// list builder calls BindPipeline/BindMesh for that), vkCmdPushConstants
// with PushConstants() (the model matrix then the colour, 80 bytes, laid out
// as GLSL `layout(push_constant) uniform PC { mat4 model; vec4 color; }`),
// and vkCmdDraw(VertexCount, InstanceCount, FirstVertex, Instance), or
// vkCmdDrawIndexed(VertexCount, InstanceCount, FirstVertex, 0, Instance)
// for an indexed mesh. The shader sees Instance through gl_InstanceIndex:
// the crowd demo uses it as the character index that selects its bone
// palette.
type DrawPacket struct {
	Key      SortKey
	Pipeline PipelineID
	Mesh     MeshID
	// FirstVertex and VertexCount select vertices, or indices when the
	// mesh has an index buffer (Mesh.Indices > 0).
	FirstVertex uint32
	VertexCount uint32
	// Instance is the first instance (vkCmdDraw firstInstance), for
	// example the character index; InstanceCount is how many instances.
	Instance      uint32
	InstanceCount uint32
	// Model is the object-to-world matrix, column-major (mathgl.Mat4).
	Model [16]float32
	// Color is a per-draw RGBA tint.
	Color [4]float32
}

// PushConstantsSize is the size of DrawPacket.PushConstants.
const PushConstantsSize = 80

// PushConstants returns the draw's per-draw constants, Model then Color,
// as the 80 bytes to pass to vkCmdPushConstants. The slice aliases d.
func (d *DrawPacket) PushConstants() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&d.Model)), PushConstantsSize)
}

// StateKind says which dynamic state a StatePacket sets.
type StateKind uint32

const (
	// StateViewport sets the viewport to Rect (x, y, width, height in
	// pixels; depth range 0..1).
	StateViewport StateKind = iota
	// StateScissor sets the scissor rectangle to Rect.
	StateScissor
	// NumStates is the number of state kinds.
	NumStates
)

// StatePacket changes dynamic state for the packets sorted after it. The
// display-list builder re-issues the state in effect at the start of every
// range, since a secondary command buffer inherits no dynamic state.
type StatePacket struct {
	Key  SortKey
	Kind StateKind
	_    uint32
	// Rect is x, y, width, height in pixels; width and height must be >= 0.
	Rect [4]int32
}

// JobPacket is a render job the backend runs at its place in the sorted
// stream (a clear, a blit, a debug overlay, a marker). Job and Params are
// backend-defined; the render package only orders and forwards them.
type JobPacket struct {
	Key    SortKey
	Job    uint32
	_      uint32
	Params [8]uint32
}

// Payload sizes of the known packets.
const (
	drawSize  = int(unsafe.Sizeof(DrawPacket{}))
	stateSize = int(unsafe.Sizeof(StatePacket{}))
	jobSize   = int(unsafe.Sizeof(JobPacket{}))
)

// Record sizes in a stream (header plus payload), for sizing contexts.
const (
	DrawRecordSize  = evstream.HeaderSize + drawSize
	StateRecordSize = evstream.HeaderSize + stateSize
	JobRecordSize   = evstream.HeaderSize + jobSize
)
