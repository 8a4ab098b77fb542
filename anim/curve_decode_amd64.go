//go:build !purego

package anim

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// The layout curve_decode_amd64.s assumes (each line fails to compile
// unless its two sides are equal): a cursor slot of 256 bytes, a track
// descriptor of 16, the slot words' and a ring entry's byte offsets, and
// the codes of the rotation kind, ModeAll, the predictors and the end
// pair bit; the last line, unless escapes have a unary count of 16 or
// more.
const (
	_ = uint(CursorSlotWords*4-256) + uint(256-CursorSlotWords*4)
	_ = uint(format.TrackDescWords*4-16) + uint(16-format.TrackDescWords*4)
	_ = uint(format.SlHead) + uint(-format.SlHead)
	_ = uint(format.SlFresh*4-4) + uint(4-format.SlFresh*4)
	_ = uint(format.SlT2*4-8) + uint(8-format.SlT2*4)
	_ = uint(format.SlT3*4-12) + uint(12-format.SlT3*4)
	_ = uint(format.SlParams*4-24) + uint(24-format.SlParams*4)
	_ = uint(format.SlRing*4-96) + uint(96-format.SlRing*4)
	_ = uint(format.RingWords-10) + uint(10-format.RingWords)
	_ = uint(format.TrackRotation-1) + uint(1-format.TrackRotation)
	_ = uint(format.ModeAll-4) + uint(4-format.ModeAll)
	_ = uint(format.PredHold) + uint(-format.PredHold)
	_ = uint(format.PredHalf-2) + uint(2-format.PredHalf)
	_ = uint(format.ParamEndPair-1<<31) + uint(1<<31-format.ParamEndPair)
	_ = uint(format.RiceEscape - 16)
)

// curveHasAsm reports whether this CPU can run curvePassAsm and
// curveDecodeAsm (BMI1 for TZCNT, BMI2 for SHRX, SHLX and BZHI).
var curveHasAsm = cpu.X86.HasBMI1 && cpu.X86.HasBMI2

// curveHasAVX reports whether this CPU can run curveFinishAVX.
var curveHasAVX = cpu.X86.HasAVX

// curvePassAsm is needPass's loop over slots s.. of need frame f in
// assembly (curve_decode_amd64.s), each record read as readRecordFast
// reads it, the slot's words written as it writes them (TestCurvePassAsm).
// It stops before a record it leaves to the Go code (a unary count of 16
// or more, escapes included; more bits than the window's valid ones, 57
// to 64 from the eight bytes at the record's byte; a window that would
// pass the stream's nwords words), returning that record's slot,
// the position and next need frame so far; after the last slot it
// returns nslot. tracks and slots point at nslot track descriptors and
// cursor slots; base is the stream's first byte.
//
// Go's compiler keeps the record's window and code lengths partly in
// stack slots and shifts through CL at the default GOAMD64 level; the
// record is a chain of dependent codes (each one's length says where
// the next starts), so every cycle added to a code adds to the record.
//
//go:noescape
func curvePassAsm(base unsafe.Pointer, nwords int, tracks, slots *uint32, s, nslot int, f, segEnd, segStop, pos, next uint32) (int, uint32, uint32)

// curveDecodeAsm is decodeFresh in assembly (curve_decode_amd64.s) on a
// slot's ring, with the slot's head, mode and fresh count: the same
// float32 operations in the same order, each correctly rounded, without
// fused multiply-adds, so the values are the Go code's bit for bit
// (TestCurveDecodeAsm). rot is 1 for a rotation track.
//
//go:noescape
func curveDecodeAsm(cs *slotWords, rot uint32, step float32)

// curveFinishAVX is the end of sampleCurve's evaluation for the first n
// (1 to 8) tracks of buf, in AVX assembly (curve_decode_amd64.s): each
// rotation normalised as the Go code does it (|q|² summed left to right
// from rounded squares; where it is above 0, each component times
// 1/sqrt(|q|²), else (0, 0, 0, 1)) in eight lanes at once, then the lanes
// transposed and stored, four floats each, at pose[off[j]:]. The lanes
// compute the Go code's float32 operations, each correctly rounded, so
// the poses are the same bit for bit (TestCurveFinishAsm); storing a
// translation's or scale's fourth float back, as it was read, leaves it.
//
//go:noescape
func curveFinishAVX(buf *curveFinishBuf, n int, pose []float32)
