package render

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vkjobs/vkjobs/evstream"
)

// Problems MergeSort finds in its input. Each dropped packet (or dropped
// tail of a context) is counted in Stats and described by a Problem whose
// Kind is one of these; errors.Is works on the *FrameError.
var (
	// ErrOverflow: a context was full and dropped packets (it wraps
	// evstream.ErrFull).
	ErrOverflow = fmt.Errorf("render: context full, packet dropped: %w", evstream.ErrFull)
	// ErrCorrupt: a context's stream is truncated or corrupt; the rest of
	// that context was dropped. The Problem's Cause is the *evstream.Error.
	ErrCorrupt = errors.New("render: corrupt packet stream")
	// ErrPacketSize: a known packet type with the wrong payload size.
	ErrPacketSize = errors.New("render: packet has the wrong size for its type")
	// ErrUnknownPipeline: a draw names a pipeline the Registry lacks.
	ErrUnknownPipeline = errors.New("render: unknown pipeline")
	// ErrUnknownMesh: a draw names a mesh the Registry lacks.
	ErrUnknownMesh = errors.New("render: unknown mesh")
	// ErrEmptyDraw: a draw with VertexCount or InstanceCount 0.
	ErrEmptyDraw = errors.New("render: draw with no vertices or no instances")
	// ErrDrawRange: a draw reads past its mesh's vertices (or indices).
	ErrDrawRange = errors.New("render: draw range exceeds the mesh")
	// ErrInstanceRange: a draw's instances exceed Registry.SetInstances.
	ErrInstanceRange = errors.New("render: instance range exceeds the registry's limit")
	// ErrBadState: a state packet with an unknown kind or a negative size.
	ErrBadState = errors.New("render: invalid state packet")
)

// Problem is one thing MergeSort dropped. Field, Value and Limit say what
// was wrong, by Kind:
//
//	Kind                Field                     Value                       Limit
//	ErrOverflow         ""                        packets dropped             0
//	ErrCorrupt          ""                        0 (see Cause)               0
//	ErrPacketSize       "draw", "state" or "job"  payload bytes               the type's payload bytes
//	ErrUnknownPipeline  "pipeline"                the PipelineID              pipelines registered
//	ErrUnknownMesh      "mesh"                    the MeshID                  meshes registered
//	ErrEmptyDraw        "counts"                  VertexCount                 InstanceCount
//	ErrDrawRange        "vertices" or "indices"   FirstVertex+VertexCount     the mesh's vertices or indices
//	ErrInstanceRange    "instances"               Instance+InstanceCount      Registry.SetInstances
//	ErrBadState         "kind"                    the StateKind               NumStates
//	ErrBadState         "width" or "height"       the size, sign-extended     0 (sizes must be >= 0)
//
// Field tells the two kinds of ErrBadState apart, and a negative size,
// sign-extended, is at least 1<<63 while a StateKind is below 1<<32, so
// their Values differ too. String prints all of it in words.
type Problem struct {
	Context int    // index of the context in the MergeSort call
	Offset  int    // byte offset in that context's stream; -1 for overflow
	Kind    error  // one of the sentinels above
	Field   string // what in the packet was wrong (see the table)
	Value   uint64 // the offending value (see the table)
	Limit   uint64 // the bound it broke, or the other count (see the table)
	Cause   error  // for ErrCorrupt, the *evstream.Error; else nil
}

func (p Problem) String() string {
	s := fmt.Sprintf("context %d", p.Context)
	if p.Offset >= 0 {
		s += fmt.Sprintf(" offset %d", p.Offset)
	}
	return fmt.Sprintf("%s: %v: %s", s, p.Kind, p.detail())
}

// detail says what was wrong, with the numbers, in words.
func (p Problem) detail() string {
	if p.Cause != nil {
		return p.Cause.Error()
	}
	switch p.Kind {
	case ErrOverflow:
		return fmt.Sprintf("%d packets dropped", p.Value)
	case ErrPacketSize:
		return fmt.Sprintf("%s packet of %d bytes, want %d", p.Field, p.Value, p.Limit)
	case ErrUnknownPipeline, ErrUnknownMesh:
		return fmt.Sprintf("%s %d, registered are 1..%d", p.Field, p.Value, p.Limit)
	case ErrEmptyDraw:
		return fmt.Sprintf("vertex count %d, instance count %d", p.Value, p.Limit)
	case ErrDrawRange:
		return fmt.Sprintf("draw reads %s up to %d, the mesh has %d", p.Field, p.Value, p.Limit)
	case ErrInstanceRange:
		return fmt.Sprintf("draw reads instances up to %d, the limit is %d", p.Value, p.Limit)
	case ErrBadState:
		if p.Field == "kind" {
			return fmt.Sprintf("state kind %d, want below %d", p.Value, p.Limit)
		}
		return fmt.Sprintf("%s %d, want >= 0", p.Field, int64(p.Value))
	}
	return fmt.Sprintf("%s %d (limit %d)", p.Field, p.Value, p.Limit)
}

// FrameError reports that MergeSort dropped input. The sorted stream it
// returns alongside holds every valid packet, so the caller may still
// render it knowing what is missing, or skip the frame.
type FrameError struct {
	Stats    Stats
	Problems []Problem // the first few problems of each context, in context order
	Omitted  int       // problems found but not listed
}

// MaxProblemsPerContext bounds the Problems kept for each context.
const MaxProblemsPerContext = 4

func (e *FrameError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "render: frame dropped input (%d overflowed, %d invalid, %d corrupt contexts)",
		e.Stats.Overflow, e.Stats.Invalid, e.Stats.Corrupt)
	for i, p := range e.Problems {
		if i == 3 {
			fmt.Fprintf(&b, "; ... (%d more)", len(e.Problems)-i+e.Omitted)
			return b.String()
		}
		b.WriteString("; ")
		b.WriteString(p.String())
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "; ... (%d more)", e.Omitted)
	}
	return b.String()
}

// Unwrap returns each problem's Kind and Cause, so errors.Is(err,
// ErrUnknownMesh) and errors.As(err, &*evstream.Error) work.
func (e *FrameError) Unwrap() []error {
	var errs []error
	for _, p := range e.Problems {
		errs = append(errs, p.Kind)
		if p.Cause != nil {
			errs = append(errs, p.Cause)
		}
	}
	return errs
}
