// Package evstream is the engine's event stream: a blob of concatenated
// events, each preceded by a header that names its type and payload size
// (after Niklas Frykholm, "Events", BitSquid development blog, 11 December
// 2009, https://bitsquid.blogspot.com/2009/12/):
//
//	[header 1][event 1][header 2][event 2] ... [header n][event n]
//
// Because each header carries the payload size, a consumer skips the events
// it does not understand. There is no global dispatcher: each system (a
// physics step, a render job) writes its own stream, and whoever consumes it
// walks it linearly. The render package builds its per-job packet streams
// (RenderContexts) on this format.
//
// # Wire format
//
// A record is an 8-byte header followed by the payload, padded with zero
// bytes to a multiple of Align (8):
//
//	 byte 0         4         8                   8+size      8+pad8(size)
//	+--------------+---------+-------------------+------------+
//	| type uint32  | size    | payload (size B)  | zero pad   |  next record...
//	+--------------+---------+-------------------+------------+
//
// Both header fields are little-endian. Type 0 is invalid (a zeroed or
// uninitialised buffer is never mistaken for a stream of events). Every
// header therefore starts at a multiple of 8 from the start of the stream,
// and in a buffer whose start is 8-aligned (NewBuffer) every payload is
// 8-aligned, so View can reinterpret it as a plain struct in place.
//
// Payloads are plain data in the writing process's native layout: a stream
// is for passing events between systems and threads of one process, not a
// file format. Put and View copy and reinterpret structs; their type
// parameter must be a plain struct with no pointers, slices, strings, maps,
// interfaces or channels (the garbage collector cannot see pointers stored in
// a byte buffer).
//
// # Ownership and threading
//
// A Writer appends into a caller-owned fixed buffer and never grows it: an
// event that does not fit is dropped, counted (Dropped, DroppedBytes) and
// reported with ErrFull, so that a hot path never allocates and a full
// buffer is visible rather than silent. A Writer is used by one goroutine at
// a time. A finished stream (Writer.Bytes) may be read by any number of
// Readers concurrently as long as nobody writes it.
//
// A Reader validates as it goes: a header that does not fit, a size that
// runs past the end, type 0 or non-zero padding stop the walk, and Err
// returns an *Error naming the byte offset and whether the stream was
// truncated (ErrTruncated) or corrupt (ErrCorrupt). A bad stream is never a
// panic and never an out-of-range slice. Writing and reading allocate
// nothing (only the error path allocates its *Error).
package evstream
