// A script body a Spec carries: written by the host that starts the
// process, on that host's machine, privately, and removed when the
// execution ends.

package runner

import (
	"os"
	"path/filepath"
	"slices"
)

// MaxScriptBytes bounds the script body a Spec carries (Spec.Script).
const MaxScriptBytes = 256 << 10

// scriptPattern names the private directory of one script file under the
// host's temporary directory.
const scriptPattern = "webcodex-script-"

// writeScript writes body to a new file "script" (0600) in a new private
// directory (0700, os.MkdirTemp's) under this machine's temporary
// directory, and returns argv with the file's path inserted after the
// interpreter (argv[0]) and a remove that deletes the directory. On error
// nothing is left behind.
func writeScript(argv []string, body []byte) (withFile []string, remove func(), err error) {
	dir, err := os.MkdirTemp("", scriptPattern)
	if err != nil {
		return nil, nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	file := filepath.Join(dir, "script")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		remove()
		return nil, nil, err
	}
	return slices.Insert(slices.Clone(argv), 1, file), remove, nil
}
