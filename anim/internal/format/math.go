package format

import "math"

func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
