package kernels

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/sched"
)

// ScanBlock is the Factor of ScanReduceU32 and ScanDownsweepU32: a scan
// works on blocks of this many values.
const ScanBlock = 256

// scanReduceU32 writes out[i] = sum of inputs [256i, 256i+256) below the
// valid count (uint32, wrapping): the block totals of a scan. Whole blocks
// run sumBlocksU32AVX2 with streamFast (the same bits).
func scanReduceU32(_ *sched.Ctx, d *sched.TaskData) error {
	x, err := inSlice[uint32](d, 0, 1)
	if err != nil {
		return err
	}
	out, err := outSlice[uint32](d, 0, 1)
	if err != nil {
		return err
	}
	n := validCount(d, ScanBlock)
	if err := needLen("output", 0, len(out), uint64(d.End), "range end"); err != nil {
		return err
	}
	if err := needLen("input", 0, len(x), min(n, uint64(d.End)*ScanBlock), "range end x factor"); err != nil {
		return err
	}
	begin := d.Begin
	if streamFast {
		if full := wholeBlocks(d.Begin, d.End, ScanBlock, n); full > begin {
			sumBlocksU32AVX2(x[uint64(begin)*ScanBlock:uint64(full)*ScanBlock], out[begin:full])
			begin = full
		}
	}
	for i := begin; i < d.End; i++ {
		lo, hi := blockRange(i, ScanBlock, n)
		var acc uint32
		for _, v := range x[lo:hi] {
			acc += v
		}
		out[i] = acc
	}
	return nil
}

// scanDownsweepU32 writes, for block i, out[256i+k] = offsets[i] + the sum
// of inputs [256i, 256i+k) (exclusive; inputs at or above the valid count
// are 0). Whole blocks run scanBlocksU32AVX2 with streamFast (the same
// bits).
func scanDownsweepU32(_ *sched.Ctx, d *sched.TaskData) error {
	offsets, err := inSlice[uint32](d, 0, 1)
	if err != nil {
		return err
	}
	x, err := inSlice[uint32](d, 1, 1)
	if err != nil {
		return err
	}
	out, err := outSlice[uint32](d, 0, 1)
	if err != nil {
		return err
	}
	n := validCount(d, ScanBlock)
	if err := needLen("input", 0, len(offsets), uint64(d.End), "range end"); err != nil {
		return err
	}
	if err := needLen("input", 1, len(x), min(n, uint64(d.End)*ScanBlock), "range end x factor, clipped to Params[0]"); err != nil {
		return err
	}
	if err := needLen("output", 0, len(out), uint64(d.End)*ScanBlock, "range end x factor"); err != nil {
		return err
	}
	begin := d.Begin
	if streamFast {
		if full := wholeBlocks(d.Begin, d.End, ScanBlock, n); full > begin {
			b, e := uint64(begin)*ScanBlock, uint64(full)*ScanBlock
			scanBlocksU32AVX2(offsets[begin:full], x[b:e], out[b:e])
			begin = full
		}
	}
	for i := begin; i < d.End; i++ {
		lo, hi := blockRange(i, ScanBlock, n)
		o := out[uint64(i)*ScanBlock : uint64(i+1)*ScanBlock]
		acc := offsets[i]
		for k, v := range x[lo:hi] {
			o[k] = acc
			acc += v
		}
		for k := hi - lo; k < ScanBlock; k++ {
			o[k] = acc
		}
	}
	return nil
}

// Adder adds tasks: *sched.Ctx and *sched.Scheduler are Adders.
type Adder interface {
	Add(t *sched.Task) (sched.TaskID, error)
}

// ScanScratchLen returns how many uint32 values of scratch AddScan needs to
// scan n values.
func ScanScratchLen(n int) int {
	total := 1 // the top level's zero offset
	for m := n / ScanBlock; m > 1; {
		p := (m + ScanBlock - 1) / ScanBlock * ScanBlock
		total += 2 * p // block totals and their scan
		m = p / ScanBlock
	}
	return total
}

// scanLevel is one level of a multi-level scan: it scans in into out; valid
// is the number of meaningful inputs (0 = all); m = len(in)/ScanBlock.
type scanLevel struct {
	in, out []uint32
	valid   uint32
	m       uint32
}

// AddScan adds the tasks of an exclusive prefix sum out[i] = values[0] +
// ... + values[i-1] (uint32, wrapping) and returns the ID of the last one:
// when it has finished, out is complete. len(values) must be a positive
// multiple of ScanBlock (pad with zeros), len(out) == len(values), and
// scratch must hold ScanScratchLen(len(values)) values; none of them may be
// touched until the scan finished.
//
// The scan is composed so that every pass is split-safe, whatever ranges
// the scheduler (or a GPU executor) cuts it into: the block structure is
// fixed by the kernels' Factor, not by the split.
//
//  1. ScanReduceU32 sums each block of 256 values (level 0 -> totals);
//     repeated on the totals until one block remains (at most 4 levels for
//     2^32 values).
//  2. The top level is scanned by one ScanDownsweepU32 item with offset 0.
//  3. Going back down, ScanDownsweepU32 scans each block starting from its
//     block's offset (the scanned totals of the level above).
//
// Each task depends on the previous one (a chain), so t.Dependency (if any)
// gates the first, and every task gets t's Affinity, Priority and Parent; t's
// Kernel and Data are ignored. If adding a task fails, the tasks added so
// far still run and the error is returned.
func AddScan(a Adder, t sched.Task, values, out, scratch []uint32) (sched.TaskID, error) {
	n := len(values)
	if n == 0 || n%ScanBlock != 0 || uint64(n) > math.MaxUint32 {
		return sched.NoTask, fmt.Errorf("kernels: AddScan: %d values; want a positive multiple of %d below 2^32", n, ScanBlock)
	}
	if len(out) != n {
		return sched.NoTask, fmt.Errorf("kernels: AddScan: %d values but %d outputs", n, len(out))
	}
	if need := ScanScratchLen(n); len(scratch) < need {
		return sched.NoTask, fmt.Errorf("kernels: AddScan: scratch holds %d values, %d values need %d", len(scratch), n, need)
	}
	var levels [5]scanLevel
	nl := 0
	levels[0] = scanLevel{in: values, out: out, m: uint32(n / ScanBlock)}
	off := 0
	for levels[nl].m > 1 {
		m := int(levels[nl].m)
		p := (m + ScanBlock - 1) / ScanBlock * ScanBlock
		nl++
		levels[nl] = scanLevel{in: scratch[off : off+p], out: scratch[off+p : off+2*p], valid: uint32(m), m: uint32(p / ScanBlock)}
		off += 2 * p
	}
	zero := scratch[off : off+1]
	zero[0] = 0

	task := t
	prev := t.Dependency
	add := func(k sched.KernelID, d sched.TaskData) error {
		task.Kernel, task.Data, task.Dependency = k, d, prev
		id, err := a.Add(&task)
		if err != nil {
			return fmt.Errorf("kernels: AddScan: %w", err)
		}
		prev = id
		return nil
	}
	// Up: block totals of every level below the top.
	for l := 0; l < nl; l++ {
		lv := &levels[l]
		var d sched.TaskData
		d.Elements = lv.m
		d.Params[0] = lv.valid
		d.In[0] = sched.StreamOf(lv.in)
		d.Out[0] = sched.StreamOf(levels[l+1].in[:lv.m])
		if err := add(ScanReduceU32, d); err != nil {
			return prev, err
		}
	}
	// Down: the top level from offset 0, then each level from the scanned
	// totals of the level above.
	for l := nl; l >= 0; l-- {
		lv := &levels[l]
		var d sched.TaskData
		d.Elements = lv.m
		d.Params[0] = lv.valid
		if l == nl {
			d.In[0] = sched.StreamOf(zero)
		} else {
			d.In[0] = sched.StreamOf(levels[l+1].out[:lv.m])
		}
		d.In[1] = sched.StreamOf(lv.in)
		d.Out[0] = sched.StreamOf(lv.out)
		if err := add(ScanDownsweepU32, d); err != nil {
			return prev, err
		}
	}
	return prev, nil
}
