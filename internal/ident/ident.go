// Package ident is the one rule for the names users give things that other
// ids are built from: project names (agent:<client>:<name>), runner client
// ids and SSH resource names.
package ident

import "regexp"

// MaxBytes bounds a name.
const MaxBytes = 64

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Valid reports whether s is a name: 1-64 letters, digits, '.', '_' or
// '-', starting with a letter or digit.
func Valid(s string) bool { return nameRE.MatchString(s) }
