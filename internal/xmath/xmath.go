// Package xmath holds small numeric helpers shared by the module's packages.
package xmath

import "slices"

// Integer is the integer types Pow2 accepts.
type Integer interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64
}

// Pow2 returns the smallest power of two at least n (1 for n <= 1).
func Pow2[T Integer](n T) T {
	p := T(1)
	for p < n {
		p <<= 1
	}
	return p
}

// Number is the types Median accepts.
type Number interface {
	~int | ~int32 | ~int64 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Median returns the median of x (the mean of the middle two for an even
// length; 0 for none). It does not modify x.
func Median[T Number](x []T) T {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
