package format

// PureGo, set by tests and benchmarks only, makes package anim take its
// pure-Go paths where it has assembly, so the two compare in one process.
var PureGo bool
