package anim

import (
	"fmt"

	"github.com/vkjobs/vkjobs/gpu/bind"
	"github.com/vkjobs/vkjobs/sched"
)

// The GPU sampler's loop budget.
//
// On lavapipe every pass of every loop of the sampling shader
// (shaders/anim_sample.comp) takes one from a
// counter of gpu.LavapipeLoopBudget per SIMD vector of invocations (the
// characters run together), for all the shader's loops together; once it
// is spent every later loop runs at most once, and the poses and cursors
// come out wrong without any error. A curve clip's loop passes grow with
// its segments' need frames and its animated tracks (a seek reads every
// record from its segment's start), so on a device with such a budget
// (bind.Device.LoopBudget) the kernel refuses a task whose blob holds
// clips that could need as many (sampleAdmit), with an error that names
// the clip and what to do, rather than return wrong poses.
//
// The bound follows the shader's loops in program order. A loop that no
// lane of the vector reaches takes nothing; one that some lane reaches is
// counted as one pass more than the most iterations a lane makes in it
// (its exit test: in package gpu's test of the budget a pass that only
// tests the exit took none, but counting it keeps the bound safe whatever
// shape the compiler gives the loop). Per task and per blob:
//
//	cursor copy (no SampleInPlace)   ceil(stride/8) + 1      eight words a pass, stride = Params[1]
//	constant pose                    bones + 1               bones = Params[0]
//	uniform clips                    1 + 17 U                per track: its pass, two frame decodes of two
//	                                                         three-component loops (4 passes each; lanes on
//	                                                         different tracks may take both)
//	curve seek                       1 + 11 S                per track: its pass, two points' component
//	                                                         loops (at most 4 components: 5 passes each)
//	record rounds                    (R + 1) + R (S + Q + 1) a round (need frame): a pass per track and per
//	                                                         record read, and its exit test
//	evaluation                       1 + 6 S                 per track: its pass, the 4-point decode loop
//
// S is the most animated tracks of a curve clip, R the most need frames
// (record rounds) of one segment, Q the most records read at one need
// frame, U the most animated tracks of a uniform clip (a term is absent
// when the blob has no such clip). A seek to a segment's last need frame
// reads all R rounds, forward playback fewer. Lanes on different clips
// and at different times: each term sums, over the vector's loop passes,
// the most that any lane needs, so S, R, Q and U taken as maxima over the
// blob's clips (and Q instead of the records of a lane's own round) bound
// any mix of the blob's clips and times in one vector; for a blob of one
// clip, or clips alike, that is the clip's own worst seek with a per-round
// margin. Not counted: the second seek after a scribbled cursor (a cursor
// the sampler did not write; its pose is the segment's anyway). The
// bound must follow the shader: a loop added there needs its term here
// (TestSampleGPULoopBoundHolds samples clips at their worst seek just
// under the budget on lavapipe, and checks the bound is not loose).

// clipLoops is what the GPU sampler's loop passes depend on for one clip,
// gathered by Load.
type clipLoops struct {
	off      uint32 // the clip record's offset in the blob
	uniform  bool
	slots    uint32 // animated tracks
	rounds   uint32 // curve: the most need frames (record rounds) of a segment
	perRound uint32 // curve: the most records read at one need frame
	seg      uint32 // curve: the (first) segment with that many rounds
	last     uint32 // curve: its last need frame (its worst seek), from its start
}

// gpuLoops is a blob's figures for the bound: the maxima over its clips,
// the bound of its clips' part together (env), and the clip whose own
// part is the largest.
type gpuLoops struct {
	s, r, q, u  uint64
	curve, unif bool
	env         uint64
	worst       clipLoops
	worstOwn    uint64
	clips       []clipLoops // every clip's, in the order Load met them
}

// add takes a validated clip's figures into the blob's.
func (g *gpuLoops) add(c clipLoops) {
	g.clips = append(g.clips, c)
	if c.slots == 0 {
		return // no animated track: the shader returns before any clip loop
	}
	if c.uniform {
		g.unif = true
		g.u = max(g.u, uint64(c.slots))
	} else {
		g.curve = true
		g.s = max(g.s, uint64(c.slots))
		g.r = max(g.r, uint64(c.rounds))
		g.q = max(g.q, uint64(c.perRound))
	}
	g.env = clipPart(g.s, g.r, g.q, g.u, g.curve, g.unif)
	if own := c.own(); own > g.worstOwn {
		g.worst, g.worstOwn = c, own
	}
}

// own is the clip's part of the bound on its own.
func (c clipLoops) own() uint64 {
	if c.slots == 0 {
		return 0
	}
	if c.uniform {
		return clipPart(0, 0, 0, uint64(c.slots), false, true)
	}
	return clipPart(uint64(c.slots), uint64(c.rounds), uint64(c.perRound), 0, true, false)
}

// clipPart is the bound's clip terms (see above).
func clipPart(s, r, q, u uint64, curve, unif bool) uint64 {
	n := uint64(0)
	if unif {
		n += 1 + 17*u
	}
	if curve {
		n += 1 + 11*s          // seek
		n += r + 1 + r*(s+q+1) // record rounds
		n += 1 + 6*s           // evaluation
	}
	return n
}

// taskPart is the bound's task terms: the cursor copy and the constant
// pose.
func taskPart(bones, stride uint32, inPlace bool) uint64 {
	n := uint64(bones) + 1
	if !inPlace {
		n += (uint64(stride)+7)/8 + 1
	}
	return n
}

// gpuLoopBound is the bound for a task of the sampling kernel on the
// blob with these Params (bones, cursor words, flags).
func (b *Blob) gpuLoopBound(bones, stride uint32, inPlace bool) uint64 {
	return taskPart(bones, stride, inPlace) + b.loops.env
}

// sampleAdmit is the sampling kernel's bind.Binding.Admit: on a device
// with a loop budget it refuses a task whose blob's bound reaches it. It
// allocates nothing when it admits.
func sampleAdmit(dev *bind.Device, d *sched.TaskData) error {
	if dev.LoopBudget == 0 {
		return nil
	}
	bl, _ := d.Data.(*Blob)
	if bl == nil {
		return errSampleData
	}
	task := taskPart(d.Params[0], d.Params[1], d.Params[2]&SampleInPlace != 0)
	if task+bl.loops.env < uint64(dev.LoopBudget) {
		return nil
	}
	return bl.loops.refusal(bl, dev, d.Params[0], d.Params[1], task)
}

// refusal is sampleAdmit's error: the clip with the largest own bound,
// its figures, the budget, and what to do.
func (g *gpuLoops) refusal(bl *Blob, dev *bind.Device, bones, stride uint32, task uint64) error {
	c := g.worst
	total := task + g.env
	if g.worstOwn == 0 { // the task's part alone (cannot reach the budget within the kernel's limits on Params)
		return fmt.Errorf("anim: sampling kernel: %d bones and %d cursor words need %d loop passes per GPU invocation, and device %q runs at most %d before its loops silently stop early (wrong poses): sample on the CPU (task affinity sched.AnyWorker)", bones, stride, total, dev.Name, dev.LoopBudget)
	}
	name := ClipView{bl, c.off}.Name()
	together := ""
	if own := task + g.worstOwn; own != total {
		together = fmt.Sprintf(" (%d on its own, %d with the blob's other clips in the same SIMD vector)", own, total)
	}
	if c.uniform {
		return fmt.Errorf("anim: sampling kernel: clip %q (offset %d, uniform codec, %d animated tracks) may need %d loop passes per GPU invocation%s, and device %q runs at most %d before its loops silently stop early (wrong poses): sample this blob on the CPU (task affinity sched.AnyWorker)",
			name, c.off, c.slots, total, together, dev.Name, dev.LoopBudget)
	}
	return fmt.Errorf("anim: sampling kernel: clip %q (offset %d: %d animated tracks, up to %d need frames in a segment, %d records at one) may need %d loop passes per GPU invocation%s, and device %q runs at most %d before its loops silently stop early (wrong poses): compress it with a shorter offline.CompressOptions.SegmentSeconds, or sample it on the CPU (task affinity sched.AnyWorker)",
		name, c.off, c.slots, c.rounds, c.perRound, total, together, dev.Name, dev.LoopBudget)
}
