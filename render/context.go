package render

import (
	"errors"
	"fmt"

	"github.com/vkjobs/vkjobs/evstream"
)

// RenderContext is one job's packet stream for one frame (the
// RenderContext of Niklas Frykholm's "Parallel rendering", BitSquid, 2009;
// see docs/design.md): the draw calls, state changes and render jobs that job
// gathered, in submission order, as an evstream of DrawPacket, StatePacket,
// JobPacket and application packets. It has a fixed capacity chosen at
// creation: a packet that does not fit is dropped and counted, the submit
// call returns ErrOverflow, and MergeSort reports the drops. Submitting never
// allocates and takes no lock.
//
// Threading: a RenderContext belongs to one job at a time; it is not safe
// for concurrent use. Give every gathering job its own context (bgfx's
// per-thread encoders). Hand-offs go through the scheduler: a task's
// completion happens before whatever waited for it, so a context written by
// a finished task may be merged by the waiter. Do not Reset a context, or
// submit to it, between MergeSort and the end of Record for that frame: the
// sorted stream reads packets in place.
type RenderContext struct {
	w   evstream.Writer
	n   int    // packets written
	gen uint64 // bumped by Reset and Load: a Sorted made before is stale
}

// MaxContextBytes is the largest context capacity (offsets are 32-bit).
const MaxContextBytes = 1<<32 - 1

// NewContext returns an empty context holding up to capacity bytes of
// records (DrawRecordSize bytes per draw). It allocates its buffer once.
func NewContext(capacity int) (*RenderContext, error) {
	if capacity < 0 || capacity > MaxContextBytes {
		return nil, fmt.Errorf("render: NewContext: capacity %d outside 0..%d", capacity, MaxContextBytes)
	}
	c := &RenderContext{}
	c.w.Init(evstream.NewBuffer(capacity))
	return c, nil
}

// Reset empties the context for a new frame and clears its drop count.
func (c *RenderContext) Reset() {
	c.w.Reset()
	c.n = 0
	c.gen++
}

// Draw appends a copy of *d. d.Key orders it (Key.Encode). It returns
// ErrOverflow, and counts the drop, when the context is full.
func (c *RenderContext) Draw(d *DrawPacket) error { return put(c, TypeDraw, d) }

// SetState appends a copy of *s (see StatePacket).
func (c *RenderContext) SetState(s *StatePacket) error { return put(c, TypeState, s) }

// Job appends a copy of *j (see JobPacket).
func (c *RenderContext) Job(j *JobPacket) error { return put(c, TypeJob, j) }

// Append appends an application packet of type t >= FirstAppType. The
// merge skips it (readers skip types they do not know); other consumers of
// the context's Bytes may use it.
func (c *RenderContext) Append(t evstream.Type, payload []byte) error {
	if t < FirstAppType {
		return fmt.Errorf("render: Append: type %d is reserved for render packets (use >= %d)", t, FirstAppType)
	}
	if err := c.w.Append(t, payload); err != nil {
		return wrapWrite(err)
	}
	c.n++
	return nil
}

func put[T any](c *RenderContext, t evstream.Type, v *T) error {
	if err := evstream.Put(&c.w, t, v); err != nil {
		return wrapWrite(err)
	}
	c.n++
	return nil
}

func wrapWrite(err error) error {
	if errors.Is(err, evstream.ErrFull) {
		return ErrOverflow
	}
	return fmt.Errorf("render: %w", err)
}

// Load replaces the context's contents with raw stream bytes from elsewhere
// (a capture file, a network peer), unvalidated: MergeSort validates every
// record and reports what it drops. It fails if raw exceeds the capacity.
func (c *RenderContext) Load(raw []byte) error {
	if err := c.w.Load(raw); err != nil {
		return fmt.Errorf("render: Load %d bytes into a context of %d: %w", len(raw), c.w.Cap(), ErrOverflow)
	}
	c.n = 0
	c.gen++
	return nil
}

// Bytes returns the stream written so far (aliasing the buffer).
func (c *RenderContext) Bytes() []byte { return c.w.Bytes() }

// Len returns the stream's length in bytes.
func (c *RenderContext) Len() int { return c.w.Len() }

// Cap returns the capacity in bytes.
func (c *RenderContext) Cap() int { return c.w.Cap() }

// Packets returns how many packets were submitted since Reset (0 after
// Load).
func (c *RenderContext) Packets() int { return c.n }

// Dropped returns how many packets were dropped because the context was
// full since the last Reset.
func (c *RenderContext) Dropped() int { return c.w.Dropped() }
