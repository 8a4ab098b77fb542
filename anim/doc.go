// Package anim loads and samples skeletal animation at run time (its
// offline half, package anim/offline, imports and compresses it),
// after Niklas Frykholm's "The BitSquid low level animation system"
// (BitSquid development blog, 20 November 2009,
// https://bitsquid.blogspot.com/2009/11/) and the offset-only resource
// blobs of his "The Blob and I" (12 February 2010,
// https://bitsquid.blogspot.com/2010/02/), with the error metric and the
// frame-addressable format of Nicholas Frechette's Animation Compression
// Library (ACL, https://github.com/nfrechette/acl). Measured figures
// (ratios, errors, timings) are in BENCHMARKS.md, section "anim".
//
// # Offline and runtime
//
// As in Guillaume Blanc's ozz-animation
// (https://github.com/guillaumeblanc/ozz-animation), the API is split in
// an offline half that a game does not need at run time and a runtime
// half that it does, in two packages:
//
//	anim/offline: ParseBVH, ParseGLTF, LoadFile -> Import{Skeleton, []*Clip, Mesh}
//	         (Mesh: the glTF skin's SkinnedMesh, bones mapped, 4 weights)
//	         Clip.SampleAt/PoseAt: an uncompressed clip at any time
//	         DetectFootContacts -> clip.Events
//	         Compress -> CompressedClip; Builder -> blob bytes
//	         Measure, BitSquidFloor (error as a user sees it)
//	anim:    Load/ReadBlob -> *Blob (validated) -> ClipView, SkeletonView
//	         SampleJob (many characters, own clip and time each) -> local poses
//	         LocalToModel -> model-space matrices
//	         ClipView.EventRange/AppendEvents (events in [t0, t1))
//	         SampleKernel, RegisterSampleKernel: the sampler as a scheduler
//	         kernel (CPU and Vulkan)
//
// A program that imports only anim links neither the glTF module
// (github.com/qmuntal/gltf) nor the importers and the compressor;
// TestRuntimeLinksAlone checks it with go list -deps. Package offline
// imports anim (Measure samples through the runtime's SampleJob, so the
// error it reports is the error a game sees; Event and Codec are the
// runtime's types). What both halves must agree on bit for bit (the
// blob's header words and cursor layout, quantisation and the bit
// reader and writer, the curve arithmetic of format.CurveCoeffs, the uniform
// codec's tables) lives once in anim/internal/format, which only these
// two packages can import; it is the format, not an API. This document
// describes both packages; identifiers below without a package are
// whichever package holds them (package offline's doc lists its own).
//
// Names: the runtime keeps the name anim, because the runtime is what
// most importers use (the crowd samples blobs every frame; only its
// start-up and cmd/animc build them), and anim.Blob, anim.SampleJob and
// anim.LocalToModel stay as they were. The rejected alternative kept
// everything offline in anim and moved the runtime to a new anim/runtime
// package: the package a game links would then be the one with the new,
// longer path, and the hot-path names every frame of the crowd uses would
// all change, while the offline names are used in a handful of places.
// A third option, build tags selecting the offline files out of package
// anim, was rejected too: one package that is two different APIs
// depending on the tags, and go vet and the tests would see only one of
// them at a time.
//
// Tests are named by subject. The runtime's tests that need only its API
// and offline's (blob corruption, the sample job's errors, clamped sample
// times, events at the clip's ends, LocalToModel, the sampling kernel on
// the CPU and through a scheduler, the GPU sampler against the CPU's) are
// package anim's external tests, which import offline to build blobs;
// helpers both packages' external tests share are in anim/internal/animtest,
// and fixtures that offline's internal tests use too (the CMU files'
// location, the synthetic skeleton and clips) in
// anim/internal/animtest/fixture, which does not import offline, so that
// each fixture exists once. The runtime's remaining tests in package
// offline (the CPU sampler against the source clips, blob loading, the
// uniform codec) share offline's internal test helpers (the CMU clips as
// imported and compressed, the benchmark crowd) and stay there, as does
// the CPU sampling benchmark, which the benchmark scripts name in
// anim/offline.
//
// Local poses have one layout, PoseFloats (rotation, translation, scale:
// kernels.Transform's), whoever writes them. Offline maths is package
// vmath (float64), which the crowd's rig and camera use too.
//
// Both importers produce the same in-memory form: a Skeleton (bones
// ordered parents first, rest pose, optional inverse bind matrices) and
// Clips sampled on a uniform grid, three tracks per bone (translation,
// rotation, scale), parent-relative, in metres. The unit is an explicit,
// reported choice (Import.Unit and Import.Notes): CMU BVH files use the CMU
// unit (1/0.45 inch = 0.056444 m) and lose frame 0 (a synthetic T-pose),
// other BVH files are centimetres, glTF is metres. Malformed files give a
// *ParseError naming the file and the line (BVH) or element (glTF).
//
// # Curve fitting
//
// Every track of every segment (default 1 s) is fitted on its own with a
// Hermite curve whose derivatives are implicit, computed from the
// neighbouring points as in BitSquid:
//
//	m1 = (p2 - p0)/(t2 - t0),  m2 = (p3 - p1)/(t3 - t1)
//	value(u) = c0 + u(c1 + u(c2 + u c3)),  u = (t - t1)/(t2 - t1)
//
// (format.CurveCoeffs holds the exact float32 arithmetic, shared by compressor and
// sampler). Fitting starts from the segment's end points, then repeatedly
// splits the interval with the largest error at its middle sample until
// every original sample is within the track's threshold. A discontinuity is
// two points at one time (tangents on each side are then one-sided); glTF
// STEP keys produce them. Constant tracks (every sample within threshold of
// one value) cost nothing in the stream: they live in the clip's default
// pose.
//
// Between samples the source has its own meaning, and the fit honours it
// (Clip.ValueAt): glTF keys say LINEAR (lerp, slerp on the shorter arc),
// STEP or CUBICSPLINE (Clip.Between evaluates the glTF sampler); sampled
// motion capture means lerp/slerp between samples, as ACL assumes. A
// Hermite curve through the samples swings past that line (Cesium Man's
// 24 Hz LINEAR keys: 3.4 mm at a foot halfway between keys, 34 times the
// 0.01 cm target, where the keys themselves were within 0.07 mm). So the
// fit checks BetweenPoints (3) reference points inside every interval
// between samples as well as the samples, and a segment's track is either
// a Hermite curve or linear between its points (a header bit: tangents
// equal to the chord, c2 = c3 = 0, nlerp for rotations). Each segment is
// fitted both ways and keeps the one within its threshold everywhere,
// then the fewer bits (the Hermite fit is skipped where the line keeps
// two thirds of the samples or more); where no point can help (a source
// curve between two neighbouring samples that the line cannot follow)
// the fit takes the smaller miss and Measure reports it. Mocap at 0.01 cm
// keeps almost every sample anyway, and there the line wins nearly every
// segment. A glTF clip is imported on its keys' grid (a frame rate, or
// the millisecond for keys exported at rounded times; 30 Hz when none
// holds them), at 24 Hz at least and 60 Hz with CUBICSPLINE keys, and
// ParseGLTF then doubles the rate while interpolating the samples as the
// codecs do (lerp, and nlerp for rotations) misses the file's
// interpolation between them (a cubic's curvature, a tangent corner at a
// key, LINEAR keys off the grid, slerp across keys far apart) by more
// than a fraction of the default target (offline.ResampleMax,
// ResampleP99, in the error metric below): both codecs interpolate
// between the clip's samples, so what the resampling loses no codec
// restores. The rejected alternative,
// samples at the key times themselves (a clip with non-uniform times),
// would leave the uniform codec, which addresses frames by rate, without
// a rate to use. Where keys are sparser than the samples the import
// marks their frames (Track.Keys) and the fitter starts from points
// there, as at discontinuities: a corner the source makes at a key is
// then a point of the curve rather than something the fit cuts (the
// calibration holds the 99th percentile over every sample, and a
// corner's few samples would sit in its last percent). The uniform codec
// interpolates between its frames: lerp for
// translations and scales, nlerp (lerp, then normalise) for rotations. So
// it follows LINEAR translation and scale keys and mocap exactly, and
// LINEAR rotation keys (slerp) to within the nlerp's departure from the
// slerp: 0.01° for frames 20° apart, 0.33° for frames 64° apart (0.17 mm
// at 3 cm from that joint, more on the bones beyond it: 2.56 mm in a
// reported case); the curve codec's linear segments nlerp too. The
// uniform codec has no discontinuities: a STEP is a ramp over the frame
// before it, the clip's last frame included (a STEP key at the clip's last
// time is reached over the last frame interval), and Compress fails with
// a ToleranceError when a ramp misses the target. The rejected
// alternative for the clip's end, an extra frame holding the end's value
// apart from the last interpolated one, would make the last frame the one
// place where the codec is not frame-addressable, for a jump it still
// ramps everywhere else. The curve codec stores a discontinuity at the
// clip's last frame as its last segment's end pair (two points at the
// segment end: the value held up to the end, then the end's; see package
// anim/internal/format): sampled at the clip's duration the pose is the
// end's value, any time before it the held one. Measure reports
// whatever a codec misses.
//
// # Error metric
//
// The user-visible error is the displacement, in model space, of virtual
// vertices 3 cm from each joint (along its bone's x, y and z axes), over every
// bone and every source sample, between the source clip and what the
// sampler decodes — ACL's measure, so figures compare — and, reported
// apart (ErrorStats.Between), at BetweenPoints times inside every
// interval against the source's interpolation; the calibration holds the
// larger 99th percentile of the two at the target. Model space is the
// skeleton's world (glTF: the scene, the nodes above the skeleton folded
// into its roots, frame by frame where they are animated), and the 3 cm
// and the displacement are metres there:
// a bone whose model matrix scales by s (a skeleton authored in
// centimetres under a node scaled 0.01, as Blender exports it) has its
// vertices at 3 cm/s in its own units, so the target means the same on
// the screen whatever the nodes' scales. Measure reports its
// maximum and 99th percentile (also at 1 m, which shows how errors grow on
// long levers). A track's threshold is expressed in the same metres: a
// rotation error Δq = q⁻¹q' moves a vertex at y (relative to the joint, in
// the frame after the rotation) by exactly |2 vec(Δq) × y|; the fitter
// bounds this per frame by the smaller of Σ|2 vec(Δq)ₐ|·dist(y, axis a) and
// |2 vec(Δq)|·|y| over the vertices of the bone and all its descendants
// (so twisting a limb about its own axis is cheap). Translation errors
// count times the parent's scale, scale errors relative to the bone's
// scale (Δs/s times the distance). Errors of the tracks along a chain add
// (mostly randomly); CompressOptions.ChainShare (default 0.47, the
// starting point of the calibration described below) gives each track
// about that share of the target, scaled per track by the allocation, and
// Compress calibrates it until the measured 99th percentile is at the
// target, and fails with a ToleranceError (with the most accurate clip)
// when no pass meets it or CompressOptions.MaxError.
//
// # Quantisation (and where it departs from BitSquid)
//
// BitSquid stores positions with 16 bits per component over -10..10 m
// (0.3 mm steps) and rotations as "smallest three" with 2+3×10 bits
// (precision 0.0014), plus a 16-bit time per point. At ACL's 0.01 cm
// target that is far too coarse: BitSquidFloor measures that quantisation
// alone, keeping every sample, at dozens of times the target before any
// curve error, because a rotation error on the hips moves a hand a metre
// away. So, deliberately:
//
//   - Each animated track has its own grid step, searched (several shares
//     of the threshold for quantisation, the rest for the curve) for the
//     fewest coded bits (on CMU, more bits per rotation component than 10
//     and a finer step than 0.3 mm for the hips).
//   - Rotations drop one component per segment, not per point (3 bits of
//     "mode" per track and segment instead of 2 bits per point): the one
//     that stays largest (|q| ≥ 0.4 throughout), made positive and rebuilt
//     as sqrt(1-a²-b²-c²); when none qualifies all four are stored.
//   - Points are not stored at fixed widths: a point's grid indices are
//     predicted from the track's two previous points (hold, linear, or
//     half-slope extrapolation, in integer arithmetic; a segment picks one)
//     and the residual is zigzag- and Rice-coded with a parameter per
//     track, segment and component. Times are Rice-coded deltas from the
//     track's previous point, not 16-bit absolutes.
//   - Records carry no track id (see below).
//
// The budget is spent where it buys bits (CompressOptions):
//
//   - Closed loop: a rotation is fitted not against its source value but
//     against the local rotation that puts its bone's model-space
//     orientation where the source has it, given what the sampler decodes
//     for the ancestors (parents are compressed first, level by level). An
//     ancestor's rotation error then reaches a bone only as a displacement
//     of the joints below it, so a rotation's lever is the distance to the
//     joints of its first animated descendants (and to its own and
//     unshielded descendants' vertices), not to the farthest finger. Open
//     loop (OpenLoop, and clips with non-uniform scales) fits every
//     rotation against its own source.
//   - Allocation: the tracks' thresholds are not one share of Tolerance
//     each. A model (each track's error at each bone in proportion to its
//     threshold times its lever there, the errors at a bone adding as
//     independent Gaussians, the target on the share of (bone, sample)
//     pairs above Tolerance) picks per-track multipliers (0.25 to 4) that
//     keep that share and maximise the bits saved: the hips' position gets
//     less (it moves every bone), hands and fingers more.
//   - Calibration: Compress measures the result with the sampler (as
//     Measure does) and rescales ChainShare toward Tolerance, at most
//     Passes (4) times, keeping the smallest result with p99 <= Tolerance;
//     the 99th percentile is then the target whatever the clip.
//
// CMU motion capture at 120 Hz is noisy at this precision (frame-to-frame
// jitter of about half a degree: second differences are larger than first
// differences), so at 0.01 cm nearly every sample becomes a curve point;
// what the curve saves then is small and the coding carries the ratio.
//
// # The stream and the blob
//
// A segment's curve points are stored in the order playback needs them,
// so sampling forward reads the stream linearly and a seek reads forward
// from the segment's start; the blob is one byte slice of little-endian
// 32-bit records that refer to each other by offsets, validated in full
// by Load. Both are specified, word by word and bit by bit, in package
// anim/internal/format's documentation, the package that owns the format.
//
// # The uniform codec
//
// CompressOptions{Codec: CodecUniform} stores a clip the way ACL does:
// every frame of every animated track, at a bit rate chosen per track and
// per segment, so a pose reads two frames wherever they are and costs the
// same at any playback rate, on seeks and with no cursor. Segments are
// UniformSegmentFrames (16) frames, not shared. Each track has a clip
// range (min, extent per component, float32); each segment re-ranges it
// in 8+8 bits per component and picks a code from ACL's ladder {0 (the
// track is constant over the segment: three 16-bit values), 3..16, 19}
// bits per component; rotations store three components, the one dropped
// (per segment, the largest, made non-negative) rebuilt as
// sqrt(1-a²-b²-c²). The rate search is greedy: starting from 19 bits
// everywhere it lowers, one step at a time, the track whose step saves the
// most bits per unit of added error, while the worst virtual-vertex error
// of every bone in the segment (the track's bone and descendants, in model
// space) stays within a target; Compress calibrates that target until the
// measured 99th percentile meets Tolerance (Passes), as for curves.
//
// The uniform clip record and segment layout are specified in package
// anim/internal/format's documentation.
//
// Sampling decodes floor(t*rate) and the next frame and interpolates
// (rotations: the second aligned to the first's hemisphere, lerped,
// normalised). The loader validates every table, every segment's rates,
// bits per frame and size, and bounds the ranges (rotations within ±1) so
// that any frame decodes inside the stream to finite values. The CPU
// sampler decodes a chunk of tracks (range bytes through a table, one
// unaligned 8-byte load per frame and track) and then interpolates them.
//
// On amd64 CPUs with AVX2 and BMI2 both steps run in assembly
// (uniform_amd64.s; the build tag purego, or another architecture, keeps
// the Go code, which is the reference). Decoding takes one track per
// iteration with its three components in the lanes of a register: the
// clip range's stored components picked by a permute whose control is
// indexed by the dropped component, the six range bytes widened in two
// loads, the 64 bits at a frame's position shifted by 0, n and 2n in one
// variable shift and masked. The finish (rebuild, hemisphere, nlerp)
// takes eight tracks at a time from a structure-of-arrays buffer, then
// transposes them and stores each under a mask (x, y, z; and w for a
// rotation). Both compute the Go code's float32 operations in its order,
// with no fused multiply-add, and sqrt and division are correctly rounded
// in both, so the poses are the same bit for bit (TestUniformFinishAsm,
// TestUniformAsmMatchesGo) and the GPU port stays bit-exact with either.
// Rejected: decoding eight tracks at a time with gathers (the per-lane
// rate, ranges and bit positions gathered, 13 gathers per eight tracks):
// slower than the Go path it would replace.
//
// Uniform compression is slower than curve fitting (the rate search
// evaluates every step over the segment's bones). After each step it
// re-scores every track whose bone is an ancestor or a descendant of the
// stepped track's bone: a descendant over its bone's whole subtree, an
// ancestor only below the stepped bone (each track keeps its candidate's
// model matrices and errors, and re-adds its sums in the original order,
// so the scores are the same bit for bit). The calibration's later passes
// replay the previous pass's recorded rounds (the scores do not depend on
// the target) up to the first round where their target changes a choice.
// The cost still grows with the depth of the hierarchy: cheap on a bushy
// skeleton (a few levels of limbs and fingers), close to the cube of the
// length on a long chain of single children, with a smaller constant
// (figures in BENCHMARKS.md). Skipping re-scores by bounding how far a
// step can move a score was not built: the bounds must cover rounding to
// keep the output identical. Its maximum error is
// close to its 99th percentile (the search bounds the worst vertex of
// every segment). Variants tried with the prototype that preceded it
// (segment range reduction, other segment lengths, dropping w instead of
// the largest component, samples predicted from keys at the segment
// boundaries, rotations compensated for their ancestors' decoded error,
// entropy coding of the samples) are in BENCHMARKS.md.
//
// # Sampling: the kernel
//
// ClipView.Sample samples one character on the caller's goroutine, into
// []kernels.Transform, the type kernels.ToModel, ToModelSkin, LBS and DQS
// (the per-step calls of package kernels) take as they are; time is
// float32 seconds at run time (the offline side is float64). SampleJob
// samples many characters in one call, each with its own clip
// and time, over [begin, end) (RunRange, the form a scheduler split
// calls). It reads only the blob's words and flat arrays, so a compute
// shader can run the same code over the same bytes:
//
//	input   SampleInput{Clip uint32; Time float32}     8 bytes per character
//	cursor  CursorStride uint32 words per character     read and written
//	output  local pose, 12 float32 (48 bytes) per bone:
//	        vec4 rotation (xyzw), vec4 translation (xyz, 0), vec4 scale (xyz, 0)
//	        (PoseFloats: kernels.Transform's layout, the one pose layout of
//	        anim and kernels; the blob stores rest and default poses in
//	        track order, translation first, and the sampler places them)
//
// A character's cursor is CursorHeaderWords (clip, segment, stream bit
// position, last local frame, next need frame) plus CursorSlotWords per
// animated track: the window as a ring of four points (frame, integer
// indices, value), the coding parameters, and the cubic of [p1, p2] with
// its start and 1/length. Records only update the ring's integers; values
// and coefficients are recomputed lazily, at most once per sample and
// only for the points that arrived. Cursors are caller-owned; zeros are a
// valid start and any content is safe (a mismatch re-seeks; no content
// crashes or hangs the sampler). The match is the clip's byte offset, its
// segment and the clip's identity (a checksum of the clip record's own
// bytes, header word 22, kept in cursor word 5): two blobs (a reloaded
// blob, or another one built on the same skeleton), or two concatenations
// of blobs (Load of several) that share their first blob, often hold a
// clip at the same offset, and a cursor carried over from one to the
// other re-seeks rather than read on with the other clip's state; a clip
// with the same bytes at the same offset keeps its cursors. A clip
// written without an identity (word 22 zero: blobs built before it) is
// matched by the first blob's checksum instead, as before. On a checksum
// collision (one in 2^32) the cursor would read on: zero the cursors of
// characters that change blobs where that matters. Sampling never
// allocates. Output rotations may
// come out as q or -q.
//
// Why forward playback is no cheaper than the data rate: the stream is
// read once, in order, so a pose costs what the clip's data rate
// delivered since the last pose. A record is four or five Rice codes
// decoded one after another, because each code's length decides where
// the next starts: a chain no reordering removes. The reader takes them
// from a 64-bit window of the stream without a branch on the data (one
// check at the end sends escapes and overlong records to a code-by-code
// reader). A cubic costs decoding its fresh points (smallest-three square
// root, hemisphere alignment) and its coefficients. A seek on the GPU, and
// in the reference, decodes from its segment's start, so its cost grows
// with SegmentSeconds; the CPU's fast path starts from the nearest
// snapshot of its seek index (below). So where the data rate is high
// (mocap at 0.01 cm) a pose costs several times what a frame-addressable
// format costs (two samples per track whatever the playback rate), and
// the two goals pull apart: the ratio needs sequential entropy coding
// (each point predicted from the two before it), the pose cost frame
// addressing (CodecUniform); a clip chooses (CompressOptions.Codec).
// BENCHMARKS.md has the figures, and what was tried and not kept.
//
// The CPU decodes curve clips with one of two implementations that write
// the same cursor words and poses bit for bit
// (TestCurveSamplerMatchesReference: forward at several rates, on
// seeks, across clips, on end pairs, discontinuities and four-component
// rotations, and on scribbled cursors). sampleOne's own code is the
// reference, the one the GLSL port follows line by line (format.PureGo,
// set by tests and benchmarks, selects it); sampleCurve
// (curve_cursor.go), the default, does the same integer and float32
// operations with less work around them:
//
//   - A record's four or five Rice codes are taken from one unaligned
//     64-bit load of the stream; a record longer than that window, or
//     with an escape (the check is once per record), is read again by
//     the reference (two windows, then code by code). In Go the
//     trailing-zero count takes the window with its top bit set, so it
//     needs no test for zero (a count that reaches it is rejected
//     anyway).
//   - The predictor's conditions (hold or line, the points' spacing) are
//     tested once per record, not per component, and its divisions by 1
//     and 2 (consecutive points at full or half slope: nearly every
//     record of densely sampled motion) are a multiply and a shift; Go's
//     truncating division by a constant 2 is the reference's d*k/den.
//   - On amd64 CPUs with BMI1 and BMI2 a need frame's record loop and
//     the fresh points' decoding run in assembly (curve_decode_amd64.s;
//     the build tag purego, or another architecture, keeps the Go code).
//     A code is a trailing-zero count, a shift and a bit-field extract
//     on the window in a register, where the compiled Go (at the default
//     GOAMD64 level) shifts through CL and keeps part of the window in
//     stack slots, lengthening the chain of dependent codes, and the
//     stream position stays in a register from record to record. The
//     window is the eight bytes at the position's byte, shifted by its
//     bit: 57 to 64 valid bits, zeros above them, so a code that runs
//     into the zeros ends past the valid bits (or finds no one at all: a
//     count of 64) and the record goes to the Go code. The count is taken
//     on the window as it is, without setting a top bit (a count of 16
//     or more is left to the Go code anyway). Records with
//     a unary count of 16 or more (escapes included), longer than the
//     window or at the stream's end are left to the Go code, the slot
//     untouched. The point decoding is scalar SSE: the Go code's float32
//     operations in its order, correctly rounded, no fused multiply-add.
//     Both write the Go code's slot words bit for bit (TestCurvePassAsm,
//     TestCurveDecodeAsm).
//   - With AVX, the evaluation's end (the rotations' normalisation: a
//     square root and a division each, and the stores) takes eight
//     tracks at a time (curveFinishAVX): the Go loop evaluates each
//     track's cubic into a structure-of-arrays buffer, the assembly
//     normalises all eight lanes at once and stores each lane's four
//     floats, transposed; a translation's or scale's fourth float is the
//     pose's own, read before and stored back unchanged, so every store
//     is one 16-byte move. Packed sqrt and division are correctly
//     rounded per lane, as the scalar ones are (TestCurveFinishAsm).
//   - Cursor slots are fixed-size arrays (no bounds checks in the loops),
//     and fresh points are decoded and a linear segment's coefficients
//     written in place, without calls (updateCoeffsFast).
//   - A linear segment evaluates as c0 + u(c1 + 0): with c2 = c3 = +0
//     (checked on the cursor's words, so a scribbled cursor takes Horner)
//     and u in [0, 1], that is Horner's value bit for bit.
//   - A seek (the cursor names another clip or segment, or a time before
//     its own) restores the latest snapshot of the blob's seek index at
//     or before the time instead of reading the segment's header and
//     every record after it (curve_seek.go), when the program asked for
//     one: Blob.BuildSeekIndex builds the index in memory, running the
//     record loop over every segment once; it is not in the blob, so the
//     format and the GLSL port are untouched, but its bytes (up to four
//     times a clip's stream) are memory the blob's ratio does not show,
//     which is why Load does not build it: a crowd that plays forward
//     would pay them for nothing. On valid data the loop's state once every need frame up
//     to F is read depends only on F, so the restored slots, position and
//     next need frame are the reference's, and a seek leaves every slot
//     with four fresh points, so the evaluation after it rewrites every
//     word a snapshot does not hold (values, cubic, 1/length). A
//     snapshot is taken after a need frame once the bits read since the
//     previous one reach its own size over seekDensity: a clip's index
//     is at most seekDensity times its stream's words (plus a word per
//     track and segment), and a seek reads at most about that share of
//     a snapshot's bits of records past it. A snapshot holds only the
//     state: the heads (2 bits each) and per slot the ring's four frames
//     (16 bits each) and its points' three or four indices; the
//     parameters are the segment's, and t2, t3 are the ring's last two
//     frames. Only seeks restore: a cursor that matches its clip and
//     segment is read on from where it is, scribbled or not, as the
//     reference does (TestCurveSeekIndexMatchesReference; the index's
//     size: TestCurveSeekIndexBounded). The density trades memory for
//     seek cost: the seek reads fewer records with more snapshots, and
//     nothing bounds a seek below what restoring a snapshot, decoding
//     four points per track and evaluating costs.
//
// Tried and not kept: a branch-free predictor in Go (four components
// always, the hold selected per component) was no faster, and neither
// was taking characters two at a time with their record loops
// alternating record by record (so that the processor could overlap two
// chains of dependent codes): the loop is bound by its instructions and
// branches, not by one chain's latency. Also no faster: the Go record
// reader with the divisor's case chosen once per record rather than per
// component, and evaluating the tracks in passes in scalar Go (values,
// then every rotation's square root and division, then the stores) so
// that the divisions overlap (the AVX finish does the same with eight
// lanes per instruction, and that pays). In the assembly, no faster
// either: the predictor without branches (where the line does not apply
// a step of 0, whose line is the hold; the divisors 1 and 2 as a shift
// of 0 or 1 after adding the product's sign bit), which takes more
// instructions than the branches it removes; and slower: the point
// decoding's hemisphere flip without a branch (the comparison's mask
// picking the sign bit), which puts every point's stores behind its dot
// product with the point before, so that a track's fresh points decode
// one after another instead of overlapping. Not possible without changing
// the bytes: decoding several tracks of one character side by side (a
// lane per track, each with its own stream position). Every track's
// records share the segment's one stream, in need order, and a record
// starts where the one before it ends, whatever its track: a lane's
// position is the sum of the lengths of every record before it, and a
// length is known only by decoding that record's codes. The lanes would
// wait on the same chain of lengths that the scalar loop follows; what
// is not on that chain (residuals, prediction, stores) the processor
// already overlaps with the next record's codes. The trimmed record loop
// (the window's ninth byte and the top bit dropped) is kept although
// forward playback barely moved with it: it does the same with fewer
// instructions. The fast path does not
// change what a forward pose costs in kind: a record per track and
// source frame played (at 0.01 cm nearly every sample is a point), read
// one after another because each starts where the previous one ends.
// Side-by-side decoding needs the format to change, and was prototyped
// outside the tree and not built: a segment's records split into eight
// lanes (track t in lane t mod 8, each lane its own stream, seven packed
// offsets per segment), decoded eight records at a time in AVX2 (window
// gathers, the unary counts from the lowest set bit's float exponent,
// per-lane shifts, masked lanes, a scalar fallback for escapes), bit-exact
// against the Go decoder. The lanes cost the ratio little and the records
// decode faster, but records are less than half of a forward pose:
// decoding the fresh points, their coefficients, the evaluation and the
// stores stay, so the pose would cost somewhat less, far from what a
// frame-addressable codec costs. The structural reason: at 0.01 cm this
// codec decodes curve points at the source rate (more than one per bone
// and pose from 120 Hz data), where a frame-addressable codec reads two
// samples per track whatever the source rate. A frame-addressable
// layout with this codec's quantiser (estimated, not built) loses the
// ratio on its per-segment headers instead. BENCHMARKS.md has the
// figures of both.
// A seek index inside the blob would cost the ratio what the in-memory
// one costs memory: a snapshot holds every animated track's window (four
// points with their frames), several times what a record of the same
// track costs, and snapshots frequent enough to bound a seek's reading
// to a few records per track cost more bits than the records themselves.
//
// For the GLSL port: every read is a bit field of at most 32 bits from
// uint words (format.ReadBits), Rice codes need findLSB, and predict's integer
// division must truncate toward zero (divide magnitudes, restore the sign)
// to match Go.
//
// LocalToModel turns local poses into model-space 4x4 float32 matrices
// (column-major, std430 mat4) for many instances of one skeleton.
//
// # Sampling on the GPU: the kernel
//
// RegisterSampleKernel registers the sampler as a sched kernel under an
// ID the registry hands out, and returns it (SampleKernel returns the
// registration for an ID of the caller's choosing): CPU function SampleJob.RunRange, GPU
// binding shaders/anim_sample.spv, a GLSL port of sampleOne line by line
// that decodes the same blob words (Rice codes with findLSB, the integer
// predictors with Go's truncating division, per-track steps, smallest-three
// rebuild, hemisphere alignment, the Hermite cubic) and keeps the same
// cursor words; uniform clips (chosen per character by the clip's flags)
// take a port of sampleUniform, which leaves the cursor alone. Streaming, work item = character, grain SampleGrain:
//
//	in 0   blob      uint32 words, Whole     Blob.Words(); TaskData.Data = the *Blob
//	in 1   inputs    SampleInput, 8 B        PerItem
//	in 2   cursors   Params[1] words         PerItem, read
//	out 0  poses     Params[0] x 48 B        PerItem, kernels.Transform per bone
//	out 1  cursors   Params[1] words         PerItem, written
//	Params[0] bones per pose, [1] cursor words per character,
//	[2] flags: SampleInPlace
//
// SampleJob.TaskData builds such a task over the job's slices (cursors as
// both in 2 and out 1). The poses are kernels.Transform {rot, trans,
// scale}, what kernels.LocalToModel and anim.LocalToModel read: a GPU
// sample task's output buffer is a LocalToModel task's input as is, no copy,
// no conversion (an earlier translation-first layout needed a swap, and
// mixing the two was silently wrong). The CPU function rejects bad task data with an
// error (Data not the blob of in 0, strides that disagree with Params,
// device-only memory, invalid characters). A shader cannot fail its task:
// it clamps every blob read into the blob and every stream read into its
// clip's stream, bounds every loop, and gives a character whose clip
// offset does not name a "CLIP" record, or whose clip needs more bones or
// cursor words than the strides, the identity pose; validating clip
// offsets is the host's job (TaskData validates the job).
//
// Loop budget: lavapipe gives each invocation (each SIMD vector of
// invocations run together) one budget of loop passes for all of a
// shader's loops together (gpu.LavapipeLoopBudget; the bound below counts
// each loop's exit test as a pass too, to be safe), and once it is spent
// every later loop runs at most once: no error, but wrong poses and
// cursors. A seek reads every record of its segment up to
// the time, so a curve clip's passes grow as its animated tracks times its
// segments' need frames (about two passes per track and need frame: one
// for the track, one for its record). The shader keeps them few (a record
// is read by straight code, a need frame's tracks and records are one
// loop, the cursor is copied eight words a pass); Load computes a bound on
// a blob's passes per invocation from every segment's need frames and
// records, with a margin for characters on different clips and at
// different times in one vector (gpu_bound.go has the derivation); and on
// a device with a budget (gpu.Device.LoopBudget) the kernel refuses
// (bind.Binding.Admit: the task fails with gpu.ErrRefused, nothing is
// dispatched) a task whose blob's bound reaches it, naming the clip, its
// bound and the budget. Compress such a clip with a shorter
// offline.CompressOptions.SegmentSeconds (its segments then have fewer
// need frames, at a cost in size), or sample it on the CPU. Rejected:
// clamping the loops in the shader (the poses would still be wrong,
// silently), and a check at TaskData (it does not know the device the
// task will run on, or whether it runs on the GPU at all).
//
// Agreement: the shader computes the same float32 operations in the same
// order as the Go code, with GLSL `precise` (no fused multiply-add, no
// reassociation); the Go code rounds every product that feeds a sum with
// an explicit float32 conversion, so that no build fuses it either
// (GOAMD64=v3 would; every build gives the same poses, and the same blob
// bytes from Compress); sqrt and division are correctly rounded on
// lavapipe. So on lavapipe the GPU's poses and cursors are bit-identical to
// the CPU's, forward and after random seeks, every pose float and cursor
// word (TestSampleGPUMatchesCPU; TestSampleGPURareFormatPaths covers
// discontinuities, end pairs sampled at the clip's end, four-component
// rotations, clips without animated tracks and concatenated blobs). The
// stated tolerance, for drivers that round sqrt or division within their
// allowed ULPs, is 1e-5 absolute per component (metres, quaternion
// components). Sampling then kernels.LocalToModel on the GPU over a
// GPU-resident pose buffer matches the CPU chain within LocalToModel's
// tolerance (1e-4 relative; TestSampleGPUToLocalToModel).
//
// # Sampling on the GPU: the cursors
//
// A cursor is read-modify-write state, and a shader's outputs start
// undefined, so the kernel takes the cursors as input 2 and writes them as
// output 1 (the contract's way). The intended use keeps them on the GPU:
// one GPU buffer (gpu.Device.NewBuffer, zeroed once) given as both streams
// at the same offset, with the SampleInPlace flag: the shader updates them
// where they are and they never leave the device. Without the flag it first
// copies each character's cursor from input 2 to output 1; with host slices
// they are also uploaded and read back every frame (which lets the
// scheduler split a task between CPU workers and the GPU; GPU-resident
// cursors pin a task to the GPU, the CPU function refusing device-only
// memory). The alternative, stateless sampling (no cursor kept: every pose
// decoded from its segment's start, as a random seek is), is what the
// format makes expensive: records carry no track id, so reaching a time
// means reading every record of the segment before it (BenchmarkSampleGPU
// measures the variants; figures in BENCHMARKS.md). Workgroup size barely
// matters at a thousand characters; with few characters a large group
// leaves one of lavapipe's threads idle, so SampleLocalSize is 16. On
// lavapipe the "GPU" is the CPU cores through LLVM: it samples more slowly
// than Go (one character per SIMD lane diverges on the record loops); a
// real GPU should learn the opposite, and a cost-based placer can measure
// it.
package anim
