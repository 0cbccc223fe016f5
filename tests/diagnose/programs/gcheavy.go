// Allocates hard for as many seconds as its argument: short-lived linked lists beside a live
// one that is rebuilt, so that Go's collector marks and sweeps all the time.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

type node struct {
	next  *node
	value [4]int64
}

//go:noinline
func build(n int) *node {
	var head *node
	for i := 0; i < n; i++ {
		head = &node{next: head, value: [4]int64{int64(i)}}
	}
	return head
}

func main() {
	seconds, _ := strconv.ParseFloat(os.Args[1], 64)
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	keep := build(200000)
	var sum int64
	for time.Now().Before(end) {
		for i := 0; i < 50; i++ {
			sum += build(1000).value[0]
		}
		keep = build(200000)
	}
	fmt.Println(sum, keep.value[0])
}
