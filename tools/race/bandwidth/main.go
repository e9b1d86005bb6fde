// Command bandwidth measures how fast this machine streams memory: it fills a buffer far larger
// than the caches, then has 1..G goroutines each sum its own part of it, repeatedly, and reports
// the best read rate of each goroutine count in GB/s (1 GB = 1e9 bytes). Generation of a model
// too large for the caches reads every used weight once a token, so this rate bounds it.
//
// usage: bandwidth [-mib 2048] [-g 2] [-rounds 5]
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
)

func main() {
	mib := flag.Int("mib", 2048, "buffer size in MiB")
	maxG := flag.Int("g", 2, "largest number of goroutines to try")
	rounds := flag.Int("rounds", 5, "passes over the buffer for each goroutine count; the best is kept")
	flag.Parse()
	if *mib < 64 || *mib > 1<<16 || *maxG < 1 || *maxG > 1024 || *rounds < 1 {
		fmt.Fprintf(os.Stderr, "bandwidth: -mib %d -g %d -rounds %d: want 64..65536 MiB, 1..1024 goroutines, rounds >= 1\n", *mib, *maxG, *rounds)
		os.Exit(2)
	}
	buf := make([]uint64, *mib<<20/8)
	for i := range buf {
		buf[i] = uint64(i) * 0x9e3779b97f4a7c15 // touch every page, and defeat zero-page sharing
	}
	var sink uint64
	for g := 1; g <= *maxG; g++ {
		best := 0.0
		for range *rounds {
			d, s := readAll(buf, g)
			sink ^= s
			best = max(best, float64(len(buf)*8)/d.Seconds()/1e9)
		}
		fmt.Printf("read %d MiB with %d goroutines: best %.2f GB/s of %d rounds\n", *mib, g, best, *rounds)
	}
	if sink == 1 {
		fmt.Println() // keeps the sums alive; practically never prints
	}
}

// readAll sums buf split into g contiguous parts, one goroutine each, and returns the wall time.
func readAll(buf []uint64, g int) (time.Duration, uint64) {
	sums := make([]uint64, g*8) // one cache line apart, so the goroutines share no line
	var wg sync.WaitGroup
	start := time.Now()
	for k := range g {
		part := buf[len(buf)*k/g : len(buf)*(k+1)/g]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[k*8] = sum(part)
		}()
	}
	wg.Wait()
	d := time.Since(start)
	var s uint64
	for k := range g {
		s += sums[k*8]
	}
	return d, s
}

// sum adds the words with eight independent chains, so the loop is bound by loads, not by a
// chain of dependent additions.
func sum(p []uint64) uint64 {
	var a0, a1, a2, a3, a4, a5, a6, a7 uint64
	for len(p) >= 8 {
		a0 += p[0]
		a1 += p[1]
		a2 += p[2]
		a3 += p[3]
		a4 += p[4]
		a5 += p[5]
		a6 += p[6]
		a7 += p[7]
		p = p[8:]
	}
	for _, v := range p {
		a0 += v
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}
