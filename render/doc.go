// Package render is the platform-independent half of the renderer: per-job
// packet streams, the 64-bit sort key, merge-n-sort and parallel
// display-list building. It knows no GPU; a backend (the Vulkan one is package
// gpu/gfx) plugs in through the Recorder interface.
//
// # The design: three steps, each wide
//
// After Niklas Frykholm, "Parallel rendering", BitSquid development blog,
// 14 October 2009, https://bitsquid.blogspot.com/2009/10/ (docs/design.md
// lists the sources):
//
//	 gather (N jobs)        merge-n-sort                     display-list building (R ranges)
//	+---------------+                                      +---------------------------+
//	| RenderContext |--> parse+validate --+                | range 0 -> Recorder (w=1) |--+
//	+---------------+    (task per ctx)   |  radix passes  +---------------------------+  |
//	| RenderContext |--> parse+validate --+--> (P tasks -->| range 1 -> Recorder (w=0) |--+--> EndFrame:
//	+---------------+                     |   per pass)    +---------------------------+  |    execute ranges
//	| RenderContext |--> parse+validate --+  one Sorted    | range 2 -> Recorder (w=1) |--+    in index order
//	+---------------+                        stream        +---------------------------+
//
// The steps:
//
//  1. Batch gathering. Jobs walk the visible objects and submit draw packets,
//     state changes and render jobs to their own RenderContext: an evstream
//     (package evstream) of plain structs in a fixed buffer, written without
//     locks by the one job that owns it. A full context drops and counts.
//  2. Merge-n-sort (Renderer.MergeSort). The N contexts become one stream
//     ordered by SortKey. One scheduler task per context parses and
//     validates its stream into 16-byte (key, location) items and counts
//     the key bytes; then a parallel LSD radix sort orders all the items in
//     reused buffers, one pass per key byte in which keys differ, each pass
//     one fork of P tasks over blocks (the first pass reads the contexts'
//     items in place, so merging costs nothing extra). The result is
//     stable: equal keys keep the context order, then the submission order,
//     exactly like slices.SortStableFunc on the concatenation of the
//     contexts. (One sort over all contexts rather than a sort per context
//     and a k-way merge of the runs, whose merge alone costs as much as all
//     the radix passes; see sort.go.)
//  3. Display-list building (Renderer.Record). The sorted stream is split
//     into R ranges, recorded in parallel as scheduler tasks through a
//     Recorder: for Vulkan, one secondary command buffer per range from a
//     command pool per worker, executed in range order by the primary.
//     Each range starts by re-issuing the dynamic state in effect there;
//     with Config.SplitLayers no range spans two layers, so layers can be
//     drawn in different render passes.
//
// The sorted stream refers to packets in place (context, offset) rather than
// copying them into a new blob: the recorder reads each packet once either
// way, and a copy would double the bytes moved. Only the items are sorted.
//
// # Sort key
//
// The key is 64 bits; ascending keys are the draw order:
//
//	 63      56 55               40  39  38                  24 23                     0
//	+----------+-------------------+---+---------------------+------------------------+
//	| layer  8 |   sequence   16   | T |    pipeline  15     |   depth 24, near first  |  T=0 opaque
//	+----------+-------------------+---+---------------------+------------------------+
//	| layer  8 |   sequence   16   | T |  ~depth 24, far first     |    pipeline 15     |  T=1 translucent
//	+----------+-------------------+---+---------------------------+--------------------+
//
// Layer (the pass) first; then a sequence number for ordered passes (0 in
// sorted passes); then opaque before translucent. Opaque packets are grouped
// by pipeline, then front to back; translucent ones go back to front. The
// shifts and masks are named constants beside Key.Encode and SortKey.Decode;
// TestKeyLayout checks that the fields of each layout are disjoint and cover
// all 64 bits.
//
// # Ownership and threading
//
//   - A RenderContext is used by one job at a time. Contexts are handed to
//     MergeSort after the jobs that wrote them completed (waiting on a task
//     is the happens-before edge); they must not be reset until Record for
//     that frame returned, because the sorted stream aliases them (Record
//     detects a reset and returns ErrStale).
//   - A Registry is built before the frame and read concurrently during it.
//   - A Renderer holds the reusable scratch of one frame: MergeSort and
//     Record are called by one thread (a registered scheduler thread, or a
//     kernel) that helps run the tasks while it waits. Use one Renderer per
//     frame in flight; they share the scheduler and its kernels.
//   - Recorder methods for one range are called by one worker; ranges run
//     concurrently on different workers (see Recorder).
//   - Steady state allocates nothing: submitting never allocates, and the
//     Renderer's scratch grows to the largest frame seen and is reused
//     (TestContextZeroAllocs, TestMergeSortZeroAllocs, TestRecordZeroAllocs).
//     Only a frame with problems allocates, for its *FrameError. The
//     scratch is linear in the frame: a bounded number of bytes per packet
//     and per context, whatever Config.MergeTasks is (its doc gives the
//     figures; sort.go how the sort's tasks are sized to keep it so).
//
// # Bad input
//
// Nothing a context contains can crash the renderer or silently change the
// frame. MergeSort drops and counts: packets of a full context (ErrOverflow),
// the unreadable tail of a truncated or corrupt stream (ErrCorrupt, naming
// the byte offset), known packet types of the wrong size (ErrPacketSize),
// draws naming pipelines or meshes the Registry lacks or reading past a mesh
// (ErrUnknownPipeline, ErrUnknownMesh, ErrDrawRange, ErrInstanceRange,
// ErrEmptyDraw), malformed state packets (ErrBadState). It returns the
// still-valid sorted stream with a *FrameError listing the problems, each a
// Problem naming the context, the byte offset and what was wrong, with its
// numbers (the pipeline that is not registered, the vertex and instance
// counts of an empty draw, the bad field of a state packet); the caller
// decides whether to present it. Unknown packet types are skipped by
// design (Stats.Unknown) since contexts may carry other systems' packets.
package render
