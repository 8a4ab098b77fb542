package render_test

import (
	"fmt"

	"github.com/vkjobs/vkjobs/render"
	"github.com/vkjobs/vkjobs/sched"
)

// A gather job: draws characters [first, first+n) into its own context.
type gatherJob struct {
	ctx         *render.RenderContext
	first, n    uint32
	body, glass render.PipelineID
	mesh        render.MeshID
}

func (j *gatherJob) run(c *sched.Ctx, d *sched.TaskData) error {
	j.ctx.Reset()
	for i := j.first; i < j.first+j.n; i++ {
		depth := float32(10 - i) // character i stands 10-i metres away
		opaque, _ := render.Key{Layer: 1, Pipeline: uint16(j.body), Depth: render.QuantizeDepth(depth)}.Encode()
		d := render.DrawPacket{Key: opaque, Pipeline: j.body, Mesh: j.mesh, VertexCount: 36, Instance: i, InstanceCount: 1}
		if err := j.ctx.Draw(&d); err != nil {
			return err
		}
		// Every character also carries a translucent shield.
		d.Key, _ = render.Key{Layer: 1, Translucent: true, Pipeline: uint16(j.glass), Depth: render.QuantizeDepth(depth)}.Encode()
		d.Pipeline = j.glass
		if err := j.ctx.Draw(&d); err != nil {
			return err
		}
	}
	return nil
}

func Example() {
	// The scheduler, with the gather kernel registered.
	reg := sched.NewRegistry()
	const kGather sched.KernelID = 1
	_ = reg.Register(kGather, sched.Kernel{Name: "gather", CPU: func(c *sched.Ctx, d *sched.TaskData) error {
		return d.Data.(*gatherJob).run(c, d)
	}})
	s, _ := sched.New(sched.Config{Kernels: reg})
	defer s.Close()
	main, _ := s.RegisterThread("main")

	// The handles the frame may use.
	handles := render.NewRegistry()
	body, _ := handles.AddPipeline(render.Pipeline{Name: "skinned"})
	glass, _ := handles.AddPipeline(render.Pipeline{Name: "glass"})
	mesh, _ := handles.AddMesh(render.Mesh{Name: "character", Vertices: 36})

	// Step 1: two gather jobs, each with its own context.
	jobs := make([]*gatherJob, 2)
	ctxs := make([]*render.RenderContext, 2)
	for i := range jobs {
		ctxs[i], _ = render.NewContext(64 * render.DrawRecordSize)
		jobs[i] = &gatherJob{ctx: ctxs[i], first: uint32(3 * i), n: 3, body: body, glass: glass, mesh: mesh}
	}
	root, _ := main.Create(&sched.Task{})
	for _, j := range jobs {
		_, _ = main.Add(&sched.Task{Kernel: kGather, Parent: root, Data: sched.TaskData{Data: j}})
	}
	_ = main.Run(root)
	if err := main.Wait(root); err != nil {
		fmt.Println(err)
		return
	}

	// Step 2: merge-n-sort.
	r, err := render.New(s, render.Config{Ranges: 2, MinRange: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	sorted, err := r.MergeSort(main, ctxs, handles)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range sorted.Len() {
		d := sorted.Draw(i)
		k := d.Key.Decode()
		fmt.Printf("character %d translucent=%v\n", d.Instance, k.Translucent)
	}

	// Step 3: display-list building, here through the validating recorder.
	var rec render.CountingRecorder
	st, err := r.Record(main, sorted, &rec)
	fmt.Printf("%+v %v\n", st, err)
	// Output:
	// character 5 translucent=false
	// character 4 translucent=false
	// character 3 translucent=false
	// character 2 translucent=false
	// character 1 translucent=false
	// character 0 translucent=false
	// character 0 translucent=true
	// character 1 translucent=true
	// character 2 translucent=true
	// character 3 translucent=true
	// character 4 translucent=true
	// character 5 translucent=true
	// {Ranges:2 Draws:12 States:0 Jobs:0 PipelineBinds:2 MeshBinds:2} <nil>
}
