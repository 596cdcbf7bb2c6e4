//go:build !unix

package sshresource

import "context"

// Multiplexed reports whether this system runs ControlMaster connections;
// without them (Windows' OpenSSH has no ControlMaster) every command
// connects on its own.
const Multiplexed = false

// masterProc is empty: no process is started.
type masterProc struct{}

// newControlDir makes nothing: there are no control sockets.
func newControlDir(string) (string, error) { return "", nil }

// startMaster returns a Master without a connection; its Argv is the
// resource's direct Argv.
func startMaster(_ context.Context, r Resource, key Key, _ string) (*Master, error) {
	return &Master{key: key, res: r}, nil
}

// Check has no master to ask.
func (m *Master) Check(context.Context) error { return nil }

// Exited returns nil (a channel that is never closed): there is no
// process.
func (m *Master) Exited() <-chan struct{} { return nil }

func (m *Master) alive() bool { return true }

func (m *Master) stop() error { return nil }
