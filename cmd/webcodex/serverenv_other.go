//go:build !linux

package main

import "os"

// secureServerProcess returns the environment as the configuration's
// getenv, unchanged. Outside Linux there is neither PR_SET_DUMPABLE nor a
// /proc/<pid>/environ to clear by re-executing: the server's credentials
// are kept from children only by their scrubbed environment (runner), and
// without Landlock a child runs unconfined, as serve and /api/status say
// (docs/security.md).
func secureServerProcess() (func(string) string, error) { return os.Getenv, nil }
