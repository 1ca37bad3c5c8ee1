//go:build !unix

package search

import "os"

// hardLinked: link counts are not known here.
func hardLinked(*os.File, string) bool { return false }

func hardLinkedPath(string) bool { return false }
