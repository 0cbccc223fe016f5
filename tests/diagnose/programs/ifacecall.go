// A hot interface call in a loop, with no imports (the test compiles it alone, without the
// standard library's packages). Mixer.Score is above Go's inlining budget, so each call is a
// dynamic call, which costs more than Score's common case; a CPU profile lets `go build -pgo`
// devirtualise the call site in rounds (a type check and a direct call) and inline Score
// there. A fixed amount of work: about a second of one core's time.
package main

type Scorer interface{ Score(x uint64) uint64 }

type Mixer struct{ seed uint64 }

func (m Mixer) Score(x uint64) uint64 {
	if x&63 != 0 { // the common case: a few instructions, less than the call costs
		return x ^ m.seed
	}
	h := x ^ m.seed
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	h += m.seed
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	for k := uint64(0); k < 3; k++ {
		h ^= (h << 7) | (h>>57 + k)
		h *= 0x9e3779b97f4a7c15
		h ^= h >> 29
		h += (h >> 11) ^ m.seed
	}
	return h
}

type Plain struct{}

func (Plain) Score(x uint64) uint64 { return x + 1 }

// pick returns a Mixer at run time: the compiler cannot see which Scorer rounds gets.
//
//go:noinline
func pick(n int) Scorer {
	if n > 0 {
		return Mixer{seed: uint64(n)}
	}
	return Plain{}
}

//go:noinline
func rounds(s Scorer, n int) uint64 {
	var total uint64
	for i := 0; i < n; i++ {
		total += s.Score(uint64(i))
	}
	return total
}

// stop ends what a build tag started (ifacecall_pprof.go: Go's own CPU profile).
var stop = func() {}

func main() {
	s := pick(7)
	var total uint64
	for n := 0; n < 4000; n++ {
		total += rounds(s, 100000)
	}
	stop()
	println(total % 10)
}
