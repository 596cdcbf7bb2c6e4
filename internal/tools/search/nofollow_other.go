//go:build !unix

package search

// noFollow is not available on this platform.
const noFollow = 0
