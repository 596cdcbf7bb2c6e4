//go:build unix

package runner

import (
	"os"
	"os/exec"
	"strings"
)

// LookPath resolves a program name against the child's PATH, not the
// server's.
func LookPath(name string, env []string) (string, error) {
	pathList := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			pathList = kv[len("PATH="):]
		}
	}
	for _, dir := range strings.Split(pathList, ":") {
		if dir == "" {
			continue
		}
		cand := dir + "/" + name
		if st, err := os.Stat(cand); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", exec.ErrNotFound
}
