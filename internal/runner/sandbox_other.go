//go:build !linux

package runner

import (
	"errors"
	"os/exec"
)

// LandlockABI returns 0: Landlock exists only on Linux, so every mode but
// Off is in force as Unavailable and nothing is ever compiled.
func LandlockABI() int { return 0 }

type compiled struct {
	users int
	stale bool
}

func compile(inputs) (*compiled, error) {
	return nil, errors.New("sandbox: Landlock is unavailable on this system")
}
func (c *compiled) fresh() bool  { return false }
func (c *compiled) release()     {}
func (c *compiled) close()       {}
func watch1(path string) watched { return watched{path: path} }

func startConfined(cmd *exec.Cmd, set *compiled) error {
	return errors.New("sandbox: Landlock is unavailable on this system")
}
