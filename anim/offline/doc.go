// Package offline is the offline half of package anim: it imports
// skeletal animation (ParseBVH, ParseGLTF, LoadFile, with the glTF skin's
// mesh), detects foot contacts, compresses clips (Compress, with the
// curve or the uniform codec), measures the error a game will see
// (Measure, BitSquidFloor) and builds the blobs (Builder) that package
// anim, the runtime, loads and samples. A game links anim alone; tools
// and start-up code that build blobs link this package too.
//
// Its design (the import form, curve fitting, the error metric,
// quantisation, the uniform codec) is described in package anim's
// documentation, beside the sampler it must agree with; the byte format
// (the stream, the blob, the uniform clip) is specified in package
// anim/internal/format's documentation:
// both halves take the format's constants and arithmetic from
// anim/internal/format, so what is compressed here is what anim decodes,
// bit for bit.
package offline
