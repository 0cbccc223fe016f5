//go:build cpuprofile

// Built with -tags cpuprofile, ifacecall writes Go's own CPU profile (runtime/pprof) of its
// run to the file $CPUPROFILE names: the profile that hone's is compared with.
package main

import (
	"os"
	"runtime/pprof"
)

func init() {
	out, err := os.Create(os.Getenv("CPUPROFILE"))
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		panic(err)
	}
	stop = func() {
		pprof.StopCPUProfile()
		out.Close()
	}
}
