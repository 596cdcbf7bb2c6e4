package project

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// Bounds of the project instruction files read at the project root.
const (
	// MaxInstructionFileBytes is the most body bytes returned per file.
	MaxInstructionFileBytes = 8 << 10
	// MaxInstructionFileRead is the most bytes read (and fingerprinted) per
	// file; larger files are fingerprinted over this prefix and flagged.
	MaxInstructionFileRead = 1 << 20
)

// InstructionFiles are the agent instruction files looked for at the project
// root, in this order.
var InstructionFiles = []string{"AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"}

// InstructionSource describes one instruction file.
type InstructionSource struct {
	Path string `json:"path"`
	// SHA256 fingerprints the bytes read (at most MaxInstructionFileRead).
	SHA256    string `json:"sha256"`
	Bytes     int64  `json:"bytes"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
	// Unavailable names why the file could not be read
	// (outside_project_root, unreadable); Content is then empty.
	Unavailable string `json:"unavailable,omitempty"`
}

// Instructions are the instruction files found at a project root.
type Instructions struct {
	// Status is loaded when at least one file was read, unavailable for
	// a project a remote runner serves (not read here), else not_found.
	Status  string              `json:"status"`
	Sources []InstructionSource `json:"sources"`
	// ContentIncluded is false when the bodies were left out on request
	// (the files were still read and fingerprinted).
	ContentIncluded bool `json:"content_included"`
}

// WithoutContent returns ins with every body left out: status, paths,
// sizes and fingerprints stay.
func (ins Instructions) WithoutContent() Instructions {
	out := Instructions{Status: ins.Status, Sources: make([]InstructionSource, len(ins.Sources))}
	for i, s := range ins.Sources {
		s.Content = ""
		out.Sources[i] = s
	}
	return out
}

// Fingerprint digests what was observed of the files (each path, its
// fingerprint and why it was unavailable), not whether bodies were
// included: equal fingerprints mean the files did not change.
func (ins Instructions) Fingerprint() string {
	h := sha256.New()
	for _, s := range ins.Sources {
		io.WriteString(h, s.Path+"\x00"+s.SHA256+"\x00"+s.Unavailable+"\x00")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadInstructions reads the project's instruction files through the path
// policy and a [Tree]: a file that resolves outside the root is reported
// unavailable and never read. Bodies are cut to MaxInstructionFileBytes on a UTF-8
// boundary.
func (p Project) ReadInstructions() Instructions {
	out := Instructions{Status: "not_found", Sources: []InstructionSource{}, ContentIncluded: true}
	if p.Runner != "" {
		out.Status, out.ContentIncluded = "unavailable", false
		return out
	}
	t, err := p.OpenTree()
	if err != nil {
		return out
	}
	defer t.Close()
	for _, rel := range InstructionFiles {
		loc, clean, err := t.Resolve(rel)
		if err != nil {
			if failure.Is(err, failure.PermissionDenied) {
				out.Sources = append(out.Sources, InstructionSource{Path: rel, Unavailable: "outside_project_root"})
			}
			continue
		}
		f, err := t.Root().Open(loc)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			if t.Escaped(clean) != nil {
				out.Sources = append(out.Sources, InstructionSource{Path: rel, Unavailable: "outside_project_root"})
				continue
			}
			out.Sources = append(out.Sources, InstructionSource{Path: clean, Unavailable: "unreadable"})
			continue
		}
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			f.Close()
			continue
		}
		body, err := io.ReadAll(io.LimitReader(f, MaxInstructionFileRead))
		f.Close()
		if err != nil {
			out.Sources = append(out.Sources, InstructionSource{Path: clean, Unavailable: "unreadable"})
			continue
		}
		sum := sha256.Sum256(body)
		src := InstructionSource{Path: clean, SHA256: hex.EncodeToString(sum[:]), Bytes: st.Size(), Truncated: st.Size() > int64(len(body))}
		content := body
		if len(content) > MaxInstructionFileBytes {
			content = redact.TrimIncompleteRune(content[:MaxInstructionFileBytes])
			src.Truncated = true
		}
		src.Content = string(content)
		out.Sources = append(out.Sources, src)
		out.Status = "loaded"
	}
	return out
}
