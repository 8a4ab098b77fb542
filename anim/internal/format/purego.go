package format

// PureGo, set by tests and benchmarks only, makes package anim take its
// reference paths: the pure-Go code where it has assembly (the uniform
// codec) and the reference curve decoder, the one the GLSL port follows,
// instead of its fast path; so each pair compares in one process.
var PureGo bool
