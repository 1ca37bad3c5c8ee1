//go:build !unix

package store

import "os"

// lockFile is a no-op where flock is unavailable: only the in-process guard applies.
func lockFile(*os.File) error { return nil }
