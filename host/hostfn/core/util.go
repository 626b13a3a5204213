package core

import "math"

func f64(u uint64) float64 { return math.Float64frombits(u) }
