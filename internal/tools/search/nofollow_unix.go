//go:build unix

package search

import "syscall"

// noFollow makes opening a walked file fail if it was replaced by a
// symbolic link after the walk saw a regular file.
const noFollow = syscall.O_NOFOLLOW
