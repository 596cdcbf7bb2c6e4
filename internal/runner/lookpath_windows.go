//go:build windows

package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// defaultPathExt is the list of executable extensions used when the
// child's environment has no PATHEXT (cmd.exe's default).
const defaultPathExt = ".com;.exe;.bat;.cmd"

// LookPath resolves a program name against the child's PATH, not the
// server's: a name that ends in one of the child's PATHEXT extensions is
// looked for as it is, any other name with each extension appended. The
// current directory is not searched.
func LookPath(name string, env []string) (string, error) {
	pathList, pathExt := "", ""
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "PATH":
			pathList = v
		case "PATHEXT":
			pathExt = v
		}
	}
	if pathExt == "" {
		pathExt = defaultPathExt
	}
	var exts []string
	for _, e := range filepath.SplitList(pathExt) {
		if e != "" {
			exts = append(exts, strings.ToLower(e))
		}
	}
	cands := make([]string, 0, len(exts))
	for _, e := range exts {
		cands = append(cands, name+e)
	}
	for _, e := range exts {
		if strings.EqualFold(filepath.Ext(name), e) {
			cands = []string{name}
			break
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		for _, c := range cands {
			cand := filepath.Join(dir, c)
			if st, err := os.Stat(cand); err == nil && !st.IsDir() {
				return cand, nil
			}
		}
	}
	return "", exec.ErrNotFound
}
