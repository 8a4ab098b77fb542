package evstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Format constants.
const (
	// HeaderSize is the size of a record header in bytes.
	HeaderSize = 8
	// Align is the alignment of every record, relative to the stream start.
	Align = 8
	// MaxPayload is the largest payload a record can carry.
	MaxPayload = math.MaxUint32 - Align
)

// Type identifies an event type. Each system defines its own constants; 0 is
// TypeInvalid and never written.
type Type uint32

// TypeInvalid is the reserved zero type.
const TypeInvalid Type = 0

// Sentinel errors. Reader errors are *Error values wrapping ErrTruncated or
// ErrCorrupt; Writer errors wrap the others.
var (
	ErrTruncated   = errors.New("evstream: truncated stream")
	ErrCorrupt     = errors.New("evstream: corrupt stream")
	ErrFull        = errors.New("evstream: buffer full, event dropped")
	ErrInvalidType = errors.New("evstream: type 0 is reserved")
	ErrTooLarge    = errors.New("evstream: payload larger than MaxPayload")
	ErrMisaligned  = errors.New("evstream: stream length is not a multiple of Align")
	ErrPayload     = errors.New("evstream: payload does not match the type")
	ErrNilValue    = errors.New("evstream: Put of a nil pointer")
)

// Error describes a truncated or corrupt stream: where, and why.
type Error struct {
	// Offset is the byte offset, from the start of the stream, of the
	// header or padding byte that is wrong.
	Offset int
	// Err is ErrTruncated or ErrCorrupt.
	Err error
	// Reason is a short static description.
	Reason string
	// Type and Size are the record's header fields when they were read.
	Type Type
	Size uint32
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v at byte offset %d: %s (type %d, size %d)", e.Err, e.Offset, e.Reason, e.Type, e.Size)
}

// Unwrap returns ErrTruncated or ErrCorrupt.
func (e *Error) Unwrap() error { return e.Err }

// Padded returns n rounded up to a multiple of Align.
func Padded(n int) int { return (n + Align - 1) &^ (Align - 1) }

// RecordSize returns the bytes a record with a payload of n bytes occupies.
func RecordSize(n int) int { return HeaderSize + Padded(n) }

// NewBuffer returns a zeroed buffer of at least n bytes whose start is
// 8-aligned in memory, so payloads written into it can be read in place with
// View. Allocate it once and reuse it.
func NewBuffer(n int) []byte {
	if n <= 0 {
		return nil
	}
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// Aligned reports whether b's first byte is Align-aligned in memory.
func Aligned(b []byte) bool {
	return len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%Align == 0
}

// Writer appends records to a caller-owned buffer of fixed capacity. The
// zero value has no buffer (every append is dropped); call Init. A Writer
// must be used by one goroutine at a time.
type Writer struct {
	buf          []byte
	n            int
	misaligned   bool
	dropped      int
	droppedBytes int
}

// NewWriter returns a Writer over buf (see Init).
func NewWriter(buf []byte) *Writer {
	w := &Writer{}
	w.Init(buf)
	return w
}

// Init makes w write into buf from its start, with its full length as the
// capacity, and clears the drop counters. The buffer belongs to the caller:
// w never reallocates it. Use NewBuffer for payloads read in place.
func (w *Writer) Init(buf []byte) {
	*w = Writer{buf: buf}
}

// Reset empties the stream (keeping the buffer) and clears the drop counters.
func (w *Writer) Reset() {
	w.n = 0
	w.misaligned = false
	w.dropped, w.droppedBytes = 0, 0
}

// Len returns the stream's length in bytes.
func (w *Writer) Len() int { return w.n }

// Cap returns the buffer's capacity in bytes.
func (w *Writer) Cap() int { return len(w.buf) }

// Free returns how many bytes are left.
func (w *Writer) Free() int { return len(w.buf) - w.n }

// Bytes returns the stream written so far. It aliases the buffer: it is
// valid until the next Reset, Init or Load (which rewrite the buffer), and
// later appends extend the buffer beyond the returned slice without
// changing it.
func (w *Writer) Bytes() []byte { return w.buf[:w.n:w.n] }

// Dropped returns how many events were dropped because the buffer was full
// since the last Reset or Init.
func (w *Writer) Dropped() int { return w.dropped }

// DroppedBytes returns the record bytes those dropped events needed.
func (w *Writer) DroppedBytes() int { return w.droppedBytes }

// Alloc reserves a record of type t with a payload of size bytes and returns
// the payload to fill in place. The payload may hold stale bytes from an
// earlier frame: the caller must write all of it (the padding after it is
// zeroed). When the buffer is full the event is dropped and counted, and
// Alloc returns ErrFull. It allocates nothing but the error of a negative size.
func (w *Writer) Alloc(t Type, size int) ([]byte, error) {
	if t == TypeInvalid {
		return nil, ErrInvalidType
	}
	// MaxPayload does not fit a 32-bit int, and there RecordSize of a size
	// near math.MaxInt32 overflows: the size is compared in uint64, and with
	// the free space before RecordSize is taken.
	if size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrPayload, size)
	}
	if uint64(size) > MaxPayload {
		return nil, ErrTooLarge
	}
	if w.misaligned {
		return nil, ErrMisaligned
	}
	free := len(w.buf) - w.n
	if size > free-HeaderSize || RecordSize(size) > free {
		w.dropped++
		w.droppedBytes += int(HeaderSize + (uint64(size)+Align-1)&^(Align-1))
		return nil, ErrFull
	}
	rec := RecordSize(size)
	h := w.buf[w.n : w.n+rec]
	binary.LittleEndian.PutUint32(h[0:4], uint32(t))
	binary.LittleEndian.PutUint32(h[4:8], uint32(size))
	clear(h[HeaderSize+size:])
	w.n += rec
	return h[HeaderSize : HeaderSize+size : HeaderSize+size], nil
}

// Append copies payload into a new record of type t. Like Alloc it drops and
// counts the event when the buffer is full and never allocates.
func (w *Writer) Append(t Type, payload []byte) error {
	p, err := w.Alloc(t, len(payload))
	if err != nil {
		return err
	}
	copy(p, payload)
	return nil
}

// Load replaces the stream with a copy of raw bytes from elsewhere (a
// capture, another process), without validating them: readers do that. It
// returns ErrFull, and changes nothing, when raw does not fit. If raw's
// length is not a multiple of Align, later appends fail with ErrMisaligned.
func (w *Writer) Load(raw []byte) error {
	if len(raw) > len(w.buf) {
		return ErrFull
	}
	w.Reset()
	w.n = copy(w.buf, raw)
	w.misaligned = w.n%Align != 0
	return nil
}

// Put appends *v as a record of type t, copying its bytes. T must be a
// plain struct (no pointers, slices, strings, maps, interfaces, channels).
// It never allocates. A nil v is ErrNilValue (nothing is written).
func Put[T any](w *Writer, t Type, v *T) error {
	if v == nil {
		return ErrNilValue
	}
	n := int(unsafe.Sizeof(*v))
	p, err := w.Alloc(t, n)
	if err != nil {
		return err
	}
	copy(p, unsafe.Slice((*byte)(unsafe.Pointer(v)), n))
	return nil
}

// View reinterprets payload as a *T in place, without copying. It returns
// ErrPayload when the payload's size differs from T's or its address is not
// aligned for T. The result aliases the stream's buffer. T must be a plain
// struct (see Put).
func View[T any](payload []byte) (*T, error) {
	var z T
	if uintptr(len(payload)) != unsafe.Sizeof(z) {
		return nil, ErrPayload
	}
	if len(payload) == 0 {
		// A zero-size event (a marker: its type says it all) has no
		// bytes to point at, and an empty payload's data pointer may be
		// nil; new of a zero-size type allocates nothing.
		return new(T), nil
	}
	p := unsafe.Pointer(unsafe.SliceData(payload))
	if uintptr(p)%unsafe.Alignof(z) != 0 {
		return nil, ErrPayload
	}
	return (*T)(p), nil
}

// Reader walks a stream record by record, validating each header. The zero
// value reads an empty stream. Use it like bufio.Scanner:
//
//	r := evstream.NewReader(stream)
//	for r.Next() {
//		switch r.Type() {
//		case TypeA: ...
//		default: // not ours: skip
//		}
//	}
//	if err := r.Err(); err != nil { ... }
type Reader struct {
	buf     []byte
	off     int // offset of the next header
	cur     int // offset of the current header
	typ     Type
	payload []byte
	err     error
}

// NewReader returns a Reader over buf.
func NewReader(buf []byte) Reader { return Reader{buf: buf, cur: -1} }

// Next advances to the next record and reports whether there is one. It
// returns false at the end of the stream and on the first malformed record;
// Err tells them apart. It never allocates, except for the *Error.
func (r *Reader) Next() bool {
	if r.err != nil || r.off >= len(r.buf) {
		r.typ, r.payload = TypeInvalid, nil
		return false
	}
	off := r.off
	rest := len(r.buf) - off
	if rest < HeaderSize {
		return r.fail(off, ErrTruncated, "header cut short", 0, 0)
	}
	t := Type(binary.LittleEndian.Uint32(r.buf[off:]))
	size := binary.LittleEndian.Uint32(r.buf[off+4:])
	if t == TypeInvalid {
		return r.fail(off, ErrCorrupt, "type 0 is invalid", t, size)
	}
	if uint64(size) > uint64(rest-HeaderSize) {
		return r.fail(off, ErrTruncated, "payload runs past the end", t, size)
	}
	end := off + HeaderSize + int(size)
	pad := Padded(int(size)) - int(size)
	if pad > len(r.buf)-end {
		return r.fail(end, ErrTruncated, "padding runs past the end", t, size)
	}
	for i := end; i < end+pad; i++ {
		if r.buf[i] != 0 {
			return r.fail(i, ErrCorrupt, "non-zero padding byte", t, size)
		}
	}
	r.cur = off
	r.typ = t
	r.payload = r.buf[off+HeaderSize : end : end]
	r.off = end + pad
	return true
}

func (r *Reader) fail(off int, kind error, reason string, t Type, size uint32) bool {
	r.err = &Error{Offset: off, Err: kind, Reason: reason, Type: t, Size: size}
	r.typ, r.payload = TypeInvalid, nil
	return false
}

// Type returns the current record's type.
func (r *Reader) Type() Type { return r.typ }

// Payload returns the current record's payload. It aliases the stream.
func (r *Reader) Payload() []byte { return r.payload }

// Offset returns the byte offset of the current record's header: -1
// before the first Next (the zero Reader reads 0 there: use NewReader).
func (r *Reader) Offset() int { return r.cur }

// PayloadOffset returns the byte offset of the current record's payload.
func (r *Reader) PayloadOffset() int { return r.cur + HeaderSize }

// Consumed returns how many bytes of well-formed records were read so far.
func (r *Reader) Consumed() int { return r.off }

// Err returns the *Error that stopped the walk, or nil if the stream was
// well-formed so far.
func (r *Reader) Err() error { return r.err }
