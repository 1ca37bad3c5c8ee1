package store

import (
	"fmt"
	"testing"
)

// BenchmarkFirstWriteOfATurn is what the checkpoint does before a turn's first change of a file,
// on the disk of the temporary directory: the pre-image kept (object), the manifest naming it
// saved, both durable before BeforeWrite returns.
func BenchmarkFirstWriteOfATurn(b *testing.B) {
	e := newCPEnv(&testing.T{})
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		e.put("a.go", fmt.Sprintf("package a // %d\n", i)) // a new object each time
		if err := e.cp.Begin(fmt.Sprintf("t%d", i)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := e.cp.BeforeWrite(e.abs("a.go")); err != nil {
			b.Fatal(err)
		}
	}
}
