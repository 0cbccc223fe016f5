// Computes for as many seconds as its argument without allocating, in one named function.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func collatzSteps(n uint64) uint64 {
	steps := uint64(0)
	for n != 1 {
		if n%2 == 0 {
			n /= 2
		} else {
			n = 3*n + 1
		}
		steps++
	}
	return steps
}

func main() {
	seconds, _ := strconv.ParseFloat(os.Args[1], 64)
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var total uint64
	for n := uint64(1); time.Now().Before(end); n += 1000 {
		for i := n; i < n+1000; i++ {
			total += collatzSteps(i)
		}
	}
	fmt.Println(total)
}
