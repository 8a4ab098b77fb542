//go:build cgo

package anim_test

import (
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/gpu/bind"
)

// The sampling kernel's refusal on a device whose loop budget a blob's
// bound reaches tells the user what to do in names that exist: the
// affinity that runs the task on CPU workers is sched.AnyWorker (there is
// no sched.CPU), and the option is offline.CompressOptions.SegmentSeconds.
// A budget of one pass refuses every task, so this needs no device.
func TestSampleAdmitRefusalNamesRealAffinity(t *testing.T) {
	k, err := anim.SampleKernel()
	if err != nil {
		t.Fatal(err)
	}
	admit := bind.Of(&k).Admit
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		sk, c := jitterClip(4, 31, 30, 1, allBones)
		bl := mustLoad(t, blobOf(t, sk, fastCompress(t, sk, c, codec)))
		cv := bl.Clip(0)
		job := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, 4), Cursors: make([]uint32, 4*cv.CursorWords()), CursorStride: cv.CursorWords(), Poses: make([]float32, 4*cv.Bones()*anim.PoseFloats), Bones: cv.Bones()}
		for i := range job.Inputs {
			job.Inputs[i].Clip = cv.Offset()
		}
		td, err := job.TaskData(0)
		if err != nil {
			t.Fatal(err)
		}
		err = admit(&bind.Device{Name: "a device with a tiny budget", LoopBudget: 1}, &td)
		if err == nil {
			t.Fatalf("codec %v: a budget of one loop pass admitted the task", codec)
		}
		msg := err.Error()
		if !strings.Contains(msg, "sched.AnyWorker") || strings.Contains(msg, "sched.CPU)") {
			t.Errorf("codec %v: the refusal does not name the CPU workers' affinity sched.AnyWorker: %v", codec, err)
		}
		if codec == anim.CodecCurve && !strings.Contains(msg, "offline.CompressOptions.SegmentSeconds") {
			t.Errorf("codec %v: the refusal does not name offline.CompressOptions.SegmentSeconds: %v", codec, err)
		}
		if strings.Contains(msg, "%!") {
			t.Errorf("codec %v: malformed refusal: %v", codec, err)
		}
	}
}
