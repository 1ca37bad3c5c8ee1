//go:build !linux

package fsafe

import "os"

// openedPath cannot tell where an open file is on this platform; os.Root's confinement stands
// alone.
func openedPath(*os.File) (string, bool) { return "", false }
