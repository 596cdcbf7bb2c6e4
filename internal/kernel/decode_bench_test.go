package kernel

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type benchReadIn struct {
	ProjectRef
	SessionRef
	Files []struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line,omitempty"`
		EndLine   int    `json:"end_line,omitempty"`
		MaxBytes  int    `json:"max_bytes,omitempty"`
	} `json:"files"`
}

type benchWriteIn struct {
	ProjectRef
	SessionRef
	Path                 string `json:"path"`
	Content              string `json:"content"`
	ExpectedReadRevision string `json:"expected_read_revision,omitempty"`
	ExpectedSHA256       string `json:"expected_sha256,omitempty"`
}

func resolvedFor[T any](b *testing.B) *jsonschema.Resolved {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkDecodeStrict times the strict decoding of read_files and
// write_project_file (4 KiB of content) arguments, each step on its own.
func BenchmarkDecodeStrict(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n", 64))
	read := []byte(`{"project":"agent:local:bench","files":[{"path":"small.go"}]}`)
	write := []byte(`{"project":"agent:local:bench","path":"small.go","content":` + string(content) + `,"expected_sha256":"` + strings.Repeat("ab", 32) + `"}`)
	rr, wr := resolvedFor[benchReadIn](b), resolvedFor[benchWriteIn](b)
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			var v benchReadIn
			if err := decodeStrict(read, rr, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			var v benchWriteIn
			if err := decodeStrict(write, wr, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
