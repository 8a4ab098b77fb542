// Package format holds what package anim (the runtime) and package
// anim/offline (the importers and the compressor) must agree on bit for
// bit: the blob's header words and cursor layout, the limits, track
// kinds, quantisation and the bit reader and writer, the Hermite curve
// arithmetic, and the uniform codec's tables. It is internal: the blob
// format is not an API, and its names are exported only so that the two
// halves share one copy. The format itself is described in package anim's
// documentation.
package format
