package testreport

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// addSeeds adds every testdata file with one of exts to the fuzz corpus.
func addSeeds(f *testing.F, exts ...string) {
	for _, ext := range exts {
		files, err := filepath.Glob(filepath.Join("testdata", "*"+ext))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// fuzzParser checks the Report invariants on arbitrary input: no panic, no
// negative count, Complete exactly when Problems is empty, bounds kept.
func fuzzParser(f *testing.F, fn parseFunc) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := fn(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("error from an in-memory reader: %v", err)
		}
		for _, e := range invariantErrors(r) {
			t.Error(e)
		}
	})
}

func FuzzParseGoTestJSON(f *testing.F) {
	addSeeds(f, ".jsonl")
	fuzzParser(f, ParseGoTestJSON)
}

func FuzzParseTAP(f *testing.F) {
	addSeeds(f, ".tap")
	f.Add([]byte("1..2\n# Subtest: p\n    ok 1 - c # TODO\n    1..1\nnot ok 1 - p\n  ---\n  type: suite\n  ...\nBail out!\n"))
	fuzzParser(f, ParseTAP)
}

func FuzzParseCargoTest(f *testing.F) {
	addSeeds(f, ".out")
	fuzzParser(f, ParseCargoTest)
}

func FuzzParseJUnitXML(f *testing.F) {
	addSeeds(f, ".xml")
	f.Add([]byte(`<r a="&amp;"><![CDATA[]]]]><!-- - --><?pi x?></r>`))
	fuzzParser(f, ParseJUnitXML)
}

// FuzzXMLLimiterIdentity checks that input under every limiter bound passes
// through unchanged, except terminator bytes of a comment or CDATA section
// still held back when the input ends inside it.
func FuzzXMLLimiterIdentity(f *testing.F) {
	addSeeds(f, ".xml")
	f.Add([]byte(`<r a="&amp;"><![CDATA[]]]]><!-- -- --><?pi x?></r>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= MaxXMLValueBytes {
			return
		}
		out, err := io.ReadAll(newXMLLimiter(bytes.NewReader(data)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, out) || len(data)-len(out) > 2 {
			t.Fatalf("limiter changed short input:\n in %q\nout %q", data, out)
		}
	})
}
