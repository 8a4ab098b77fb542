package gfx

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"

	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/gpu/internal/devhook"
	vk "github.com/vkjobs/vkjobs/gpu/internal/vkshim"
	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

// The built-in shaders (gfx_shaders/lit.vert and lit.frag; see gen.sh).
var (
	//go:embed gfx_shaders/lit.vert.spv
	litVertSPV []byte
	//go:embed gfx_shaders/lit_inst.vert.spv
	litInstVertSPV []byte
	//go:embed gfx_shaders/lit.frag.spv
	litFragSPV []byte
)

// Vertex is the vertex layout of every mesh (vertex buffer binding 0,
// 24 bytes): position then normal, in object space. It is the layout of
// kernels.SkinnedVertex, so the skinning kernel's output buffer is a
// vertex buffer as it is.
type Vertex struct {
	Pos    [3]float32
	Normal [3]float32
}

// Instance is the per-instance data of instanced pipelines (vertex buffer
// binding 1, 32 bytes): the instance's vertices are p*Scale + Offset
// before the draw's model matrix, and its colour multiplies the draw's.
type Instance struct {
	Offset [3]float32
	Scale  float32
	Color  [4]float32
}

// Sizes the shaders and the C pipeline description assume.
const (
	VertexSize   = 24
	InstanceSize = 32
)

var (
	_ [unsafe.Sizeof(Vertex{}) - VertexSize]struct{}
	_ [VertexSize - unsafe.Sizeof(Vertex{})]struct{}
	_ [unsafe.Sizeof(Instance{}) - InstanceSize]struct{}
	_ [InstanceSize - unsafe.Sizeof(Instance{})]struct{}
)

// CullMode says which triangles a pipeline discards. Front faces are
// counter-clockwise (see VulkanClip).
type CullMode int

const (
	CullBack CullMode = iota // the default
	CullNone
	CullFront
)

// Pipeline describes a graphics pipeline. Every pipeline shares one
// layout: set 0 binding 0 is the frame's uniform block (View), push
// constants are the draw's model matrix and colour (80 bytes), vertex
// binding 0 is Vertex, binding 1 (Instanced) is Instance; the shaders'
// interface is documented in gfx_shaders/lit.vert.
type Pipeline struct {
	Name string
	// Instanced reads per-instance data (Instance) from the mesh's
	// instance buffer; draws need meshes that have one.
	Instanced bool
	// Blend enables alpha blending and disables depth writes (translucent
	// draws, sorted back to front by render's key).
	Blend bool
	Cull  CullMode
	// NoDepthTest draws without depth testing or writing.
	NoDepthTest bool
	// VertexSPIRV and FragmentSPIRV replace the built-in lit shaders
	// (SPIR-V 1.0, entry point "main", the interface above). Nil: built-in.
	// AddPipeline refuses (gpu.ErrBadBinding) a module whose "main" is of
	// another stage, or that uses descriptors other than set 0 binding 0
	// or more push constants than the 80 bytes; vertex inputs and the
	// stages' varyings are not checked.
	VertexSPIRV, FragmentSPIRV []byte
}

type gfxPipeline struct {
	id        render.PipelineID
	name      string
	pipe      uint64
	instanced bool
}

// Mesh describes a mesh whose data already lives in GPU buffers: the
// skinning kernel's output, or buffers filled with gpu.Buffer.Write. The
// Graphics holds a reference to each buffer until it closes, so closing
// a buffer while its mesh is registered is safe (the memory stays).
//
// The Graphics reads the buffers while frames execute: write them (on the
// host or with GPU tasks) only when no submitted frame that reads them is
// still running, e.g. double-buffer per frame in flight, or call
// Graphics.Wait first. GPU tasks that write them and complete before
// BeginFrame are ordered correctly: every frame starts with a barrier from
// compute, transfer and host writes to vertex input, and ends with one
// from its reads to later compute and transfers.
type Mesh struct {
	Name string
	// Vertices holds VertexCount Vertex values from byte VertexOffset (a
	// multiple of 4): e.g. the skinning kernel's output stream, one
	// character's vertices at offset character*verticesPerCharacter*24.
	Vertices     *gpu.Buffer
	VertexOffset uint64
	VertexCount  uint32
	// Indices, when set, holds IndexCount indices (uint32, or uint16 with
	// Index16) from byte IndexOffset (a multiple of the index size); the
	// indices must be below VertexCount (not checked for GPU-written
	// buffers: an index beyond the vertices reads undefined data).
	Indices     *gpu.Buffer
	IndexOffset uint64
	IndexCount  uint32
	Index16     bool
	// Instances, when set, holds InstanceCount Instance values from byte
	// InstanceOffset (a multiple of 4), for instanced pipelines.
	Instances      *gpu.Buffer
	InstanceOffset uint64
	InstanceCount  uint32
}

type gfxMesh struct {
	id             render.MeshID
	name           string
	vbuf, voff     uint64
	ibuf, ioff     uint64
	indexType      uint32 // 0 none, 1 uint16, 2 uint32
	inst, instOff  uint64
	vcount, icount uint32
	instCount      uint32
	refs           []*gpu.Buffer
}

func (m *gfxMesh) release() {
	for _, b := range m.refs {
		devhook.BufferOf(b).Release()
	}
	m.refs = nil
}

// SPIR-V execution models of the two stages a Pipeline takes.
const (
	spvModelVertex   = 0
	spvModelFragment = 4
)

// spvModelName names a SPIR-V execution model for messages.
func spvModelName(m uint32) string {
	names := [...]string{"Vertex", "TessellationControl", "TessellationEvaluation", "Geometry", "Fragment", "GLCompute", "Kernel"}
	if int(m) < len(names) {
		return names[m]
	}
	return fmt.Sprintf("model %d", m)
}

// checkSPIRV rejects what is obviously not a SPIR-V 1.0 module before it
// reaches the driver (lavapipe may crash on malformed SPIR-V).
func checkSPIRV(code []byte, what string) error {
	if len(code) < 20 || len(code)%4 != 0 {
		return fmt.Errorf("%w: %s: %d bytes is not a SPIR-V module", gpu.ErrBadBinding, what, len(code))
	}
	if m := binary.LittleEndian.Uint32(code); m != bind.SPVMagic {
		return fmt.Errorf("%w: %s: magic %#x is not SPIR-V's", gpu.ErrBadBinding, what, m)
	}
	if v := binary.LittleEndian.Uint32(code[4:]); v > 0x00010000 {
		return fmt.Errorf("%w: %s: SPIR-V version %#x is newer than 1.0 (compile with --target-env=vulkan1.0)", gpu.ErrBadBinding, what, v)
	}
	return nil
}

// checkStage is checkSPIRV plus what the module's SPIR-V states of the
// pipeline interface: a "main" entry point of the stage's execution model,
// descriptors and push constants within the shared layout. lavapipe
// crashes (SIGSEGV in vkCreateGraphicsPipelines) on a module of the wrong
// stage, e.g. the fragment shader passed as the vertex shader, and on a
// descriptor outside the layout. The module is read with package bind's
// SPIR-V reader, which also checks that every instruction fits. Vertex
// input locations are not checked (the reader does not record them).
func checkStage(code []byte, what string, model uint32) error {
	if err := checkSPIRV(code, what); err != nil {
		return err
	}
	mod, err := bind.ParseSPIRV(code)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", gpu.ErrBadBinding, what, err)
	}
	var models []string // of the entry points named "main"
	found := false
	for _, ep := range mod.EntryPoints {
		if ep.Name == "main" {
			found = found || ep.Model == model
			models = append(models, spvModelName(ep.Model))
		}
	}
	switch {
	case len(models) == 0:
		return fmt.Errorf("%w: %s: the module has no entry point \"main\"", gpu.ErrBadBinding, what)
	case !found:
		return fmt.Errorf("%w: %s: entry point \"main\" is a %s shader, want %s", gpu.ErrBadBinding, what, strings.Join(models, "/"), spvModelName(model))
	}
	// The shared pipeline layout has set 0 binding 0 (the frame's uniform
	// block) and pushConstantBytes of push constants, nothing else; a
	// shader that uses more breaks vkCreateGraphicsPipelines' rules, and
	// lavapipe crashes on some of those (a descriptor in set 1).
	for _, r := range mod.Resources {
		if r.Used && (r.Set != 0 || r.Binding != 0 || r.Kind != bind.ResourceUniform || r.Array) {
			return fmt.Errorf("%w: %s: it uses a %s at set %d binding %d%s; the pipeline layout has only the frame's uniform block at set 0 binding 0",
				gpu.ErrBadBinding, what, r.Kind, r.Set, r.Binding, arrayNote(r.Array))
		}
	}
	if mod.PushConstantBytes > pushConstantBytes {
		return fmt.Errorf("%w: %s: its push-constant block is %d bytes; draws push %d (mat4 model, vec4 color)", gpu.ErrBadBinding, what, mod.PushConstantBytes, pushConstantBytes)
	}
	return nil
}

func arrayNote(array bool) string {
	if array {
		return " (an array of descriptors)"
	}
	return ""
}

// AddPipeline creates a graphics pipeline and registers it: in reg, which
// assigns the ID, when reg is not nil, else under the next free ID. Use
// one Registry per Graphics and register pipelines and meshes through the
// Graphics only, so that IDs agree. Creation compiles the shaders (tens of
// milliseconds on lavapipe); do it before the frame loop.
func (g *Graphics) AddPipeline(reg *render.Registry, p Pipeline) (render.PipelineID, error) {
	if err := g.usable("AddPipeline"); err != nil {
		return 0, err
	}
	vert, frag := p.VertexSPIRV, p.FragmentSPIRV
	if vert == nil {
		vert = litVertSPV
		if p.Instanced {
			vert = litInstVertSPV
		}
	}
	if frag == nil {
		frag = litFragSPV
	}
	if err := checkStage(vert, "vertex shader", spvModelVertex); err != nil {
		return 0, fmt.Errorf("gpu: AddPipeline %q: %w", p.Name, err)
	}
	if err := checkStage(frag, "fragment shader", spvModelFragment); err != nil {
		return 0, fmt.Errorf("gpu: AddPipeline %q: %w", p.Name, err)
	}
	var cull uint32
	switch p.Cull {
	case CullBack:
		cull = uint32(vk.CullModeBackBit)
	case CullNone:
		cull = uint32(vk.CullModeNone)
	case CullFront:
		cull = uint32(vk.CullModeFrontBit)
	default:
		return 0, fmt.Errorf("gpu: AddPipeline %q: unknown CullMode %d", p.Name, p.Cull)
	}
	t := g.t
	vm, r := t.ShaderModule(vert)
	defer t.Destroy(vk.ObjShaderModule, &vm)
	if r != vk.Success {
		return 0, fmt.Errorf("gpu: AddPipeline %q: vertex shader: %w: %w", p.Name, gpu.ErrBadBinding, check("vkCreateShaderModule", r))
	}
	fm, r := t.ShaderModule(frag)
	defer t.Destroy(vk.ObjShaderModule, &fm)
	if r != vk.Success {
		return 0, fmt.Errorf("gpu: AddPipeline %q: fragment shader: %w: %w", p.Name, gpu.ErrBadBinding, check("vkCreateShaderModule", r))
	}
	// The pipeline cache is shared with compute pipelines; VkPipelineCache
	// is internally synchronised.
	pipe, r := t.GraphicsPipeline(g.hnd.PipelineCache, &vk.PipeDesc{Vert: vm, Frag: fm, Layout: g.pipeLayout, RenderPass: g.renderPass,
		Instanced: p.Instanced, Blend: p.Blend, DepthTest: !p.NoDepthTest, Cull: cull})
	if r != vk.Success {
		return 0, fmt.Errorf("gpu: AddPipeline %q: %w", p.Name, g.failVk("vkCreateGraphicsPipelines", r))
	}
	gp := &gfxPipeline{name: p.Name, pipe: pipe, instanced: p.Instanced}
	id := render.PipelineID(len(g.pipes) + 1)
	if reg != nil {
		var err error
		if id, err = reg.AddPipeline(render.Pipeline{Name: p.Name}); err != nil {
			t.Destroy(vk.ObjPipeline, &gp.pipe)
			return 0, err
		}
	}
	if int(id) <= len(g.pipes) && g.pipes[id-1] != nil {
		t.Destroy(vk.ObjPipeline, &gp.pipe)
		return 0, fmt.Errorf("gpu: AddPipeline %q: the registry gave ID %d, which this Graphics already uses (use one Registry per Graphics)", p.Name, id)
	}
	for len(g.pipes) < int(id) {
		g.pipes = append(g.pipes, nil)
	}
	gp.id = id
	g.pipes[id-1] = gp
	return id, nil
}

// bufRange checks that count elements of size bytes from off lie in b.
func bufRange(b *gpu.Buffer, off uint64, count uint32, size, align uint64, what string) error {
	switch {
	case b == nil:
		return fmt.Errorf("%w: %s: nil buffer", gpu.ErrBadStream, what)
	case devhook.BufferOf(b).Closed():
		return fmt.Errorf("%w: %s: buffer %d is closed", gpu.ErrBadStream, what, b.ID())
	case count == 0:
		return fmt.Errorf("%w: %s: count 0", gpu.ErrBadStream, what)
	case off%align != 0:
		return fmt.Errorf("%w: %s: offset %d is not a multiple of %d", gpu.ErrBadStream, what, off, align)
	case off > b.Size() || uint64(count)*size > b.Size()-off:
		return fmt.Errorf("%w: %s: %d elements of %d bytes from offset %d exceed buffer %d of %d bytes",
			gpu.ErrBadStream, what, count, size, off, b.ID(), b.Size())
	}
	return nil
}

// AddMesh registers a mesh whose data is in GPU buffers (see Mesh), in
// reg when not nil (see AddPipeline for IDs). It takes a reference to
// each buffer until Close.
func (g *Graphics) AddMesh(reg *render.Registry, m Mesh) (render.MeshID, error) {
	if err := g.usable("AddMesh"); err != nil {
		return 0, err
	}
	gm := &gfxMesh{name: m.Name, vcount: m.VertexCount}
	if err := bufRange(m.Vertices, m.VertexOffset, m.VertexCount, VertexSize, 4, "vertices"); err != nil {
		return 0, fmt.Errorf("gpu: AddMesh %q: %w", m.Name, err)
	}
	gm.vbuf, gm.voff = uint64(devhook.BufferOf(m.Vertices).Handle()), m.VertexOffset
	bufs := []*gpu.Buffer{m.Vertices}
	if m.Indices != nil {
		size, it := uint64(4), uint32(2)
		if m.Index16 {
			size, it = 2, 1
		}
		if err := bufRange(m.Indices, m.IndexOffset, m.IndexCount, size, size, "indices"); err != nil {
			return 0, fmt.Errorf("gpu: AddMesh %q: %w", m.Name, err)
		}
		gm.ibuf, gm.ioff, gm.indexType, gm.icount = uint64(devhook.BufferOf(m.Indices).Handle()), m.IndexOffset, it, m.IndexCount
		bufs = append(bufs, m.Indices)
	} else if m.IndexCount != 0 {
		return 0, fmt.Errorf("gpu: AddMesh %q: IndexCount %d without an index buffer", m.Name, m.IndexCount)
	}
	if m.Instances != nil {
		if err := bufRange(m.Instances, m.InstanceOffset, m.InstanceCount, InstanceSize, 4, "instances"); err != nil {
			return 0, fmt.Errorf("gpu: AddMesh %q: %w", m.Name, err)
		}
		gm.inst, gm.instOff, gm.instCount = uint64(devhook.BufferOf(m.Instances).Handle()), m.InstanceOffset, m.InstanceCount
		bufs = append(bufs, m.Instances)
	}
	for _, b := range bufs {
		if !devhook.BufferOf(b).Acquire() {
			gm.release()
			return 0, fmt.Errorf("gpu: AddMesh %q: %w: buffer %d is closed", m.Name, gpu.ErrBadStream, b.ID())
		}
		gm.refs = append(gm.refs, b)
	}
	id := render.MeshID(len(g.meshes) + 1)
	if reg != nil {
		var err error
		if id, err = reg.AddMesh(render.Mesh{Name: m.Name, Vertices: m.VertexCount, Indices: m.IndexCount}); err != nil {
			gm.release()
			return 0, err
		}
	}
	if uint64(id) <= uint64(len(g.meshes)) && g.meshes[id-1] != nil {
		gm.release()
		return 0, fmt.Errorf("gpu: AddMesh %q: the registry gave ID %d, which this Graphics already uses (use one Registry per Graphics)", m.Name, id)
	}
	for uint64(len(g.meshes)) < uint64(id) {
		g.meshes = append(g.meshes, nil)
	}
	gm.id = id
	g.meshes[id-1] = gm
	return id, nil
}

// NewMesh uploads a mesh from host data into new GPU buffers that the
// Graphics owns, and registers it (see AddMesh). indices (may be nil) must
// be below len(verts); instances may be nil.
func (g *Graphics) NewMesh(reg *render.Registry, name string, verts []Vertex, indices []uint32, instances []Instance) (render.MeshID, error) {
	if err := g.usable("NewMesh"); err != nil {
		return 0, err
	}
	if len(verts) == 0 || uint64(len(verts)) > 1<<32-1 || uint64(len(indices)) > 1<<32-1 || uint64(len(instances)) > 1<<32-1 {
		return 0, fmt.Errorf("gpu: NewMesh %q: %d vertices, %d indices, %d instances", name, len(verts), len(indices), len(instances))
	}
	for i, ix := range indices {
		if ix >= uint32(len(verts)) {
			return 0, fmt.Errorf("gpu: NewMesh %q: index %d is %d, beyond the %d vertices", name, i, ix, len(verts))
		}
	}
	m := Mesh{Name: name, VertexCount: uint32(len(verts)), IndexCount: uint32(len(indices)), InstanceCount: uint32(len(instances))}
	var made []*gpu.Buffer
	fail := func(err error) (render.MeshID, error) {
		for _, b := range made {
			b.Close()
		}
		return 0, fmt.Errorf("gpu: NewMesh %q: %w", name, err)
	}
	upload := func(p []byte) (*gpu.Buffer, error) {
		b, err := g.d.NewBuffer(uint64(len(p)))
		if err != nil {
			return nil, err
		}
		made = append(made, b)
		return b, b.Write(0, p)
	}
	var err error
	if m.Vertices, err = upload(sched.StreamOf(verts).Bytes); err != nil {
		return fail(err)
	}
	if len(indices) > 0 {
		if m.Indices, err = upload(sched.StreamOf(indices).Bytes); err != nil {
			return fail(err)
		}
	}
	if len(instances) > 0 {
		if m.Instances, err = upload(sched.StreamOf(instances).Bytes); err != nil {
			return fail(err)
		}
	}
	id, err := g.AddMesh(reg, m)
	if err != nil {
		return fail(err)
	}
	// The mesh holds its own references; the Graphics closes the owner's
	// at Close.
	g.owned = append(g.owned, made...)
	return id, nil
}
