package lsp

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/webcodex/webcodex/internal/runner"
)

// A Language is a language with the server that navigates it.
type Language struct {
	// Name is the language's name in requests ("go").
	Name string
	// ID is the LSP languageId of its documents, unless IDs names
	// another for the document's extension.
	ID  string
	IDs map[string]string
	// Server is the executable looked up on the child PATH.
	Server string
	// Args are the server's arguments.
	Args []string
	// Extensions are the file name extensions of the language.
	Extensions []string
	// Install says how to install the server; it is part of a
	// language_server_unavailable message.
	Install string
	// Env is added to the server's environment; PrivateDir in a value is
	// replaced by the server's private writable directory.
	Env map[string]string
	// InitOptions are the initializationOptions of its initialize
	// request (nil: none).
	InitOptions map[string]any
}

// DocumentID is the LSP languageId of the document at name.
func (l Language) DocumentID(name string) string {
	if id, ok := l.IDs[strings.ToLower(path.Ext(name))]; ok {
		return id
	}
	return l.ID
}

// PrivateDir stands for a server's private writable directory in a
// Language's Env values.
const PrivateDir = "{private}"

// Languages are the languages this package navigates, in lookup order.
// gopls never fetches: modules are read-only (GOFLAGS=-mod=readonly),
// there is no proxy (GOPROXY=off) and no toolchain download
// (GOTOOLCHAIN=local); its caches live in its private directory.
var Languages = []Language{
	{
		Name: "go", ID: "go", Server: "gopls", Extensions: []string{".go"},
		Install: "go install golang.org/x/tools/gopls@latest",
		Env: map[string]string{
			"GOFLAGS": "-mod=readonly", "GOPROXY": "off", "GOTOOLCHAIN": "local",
			"GOCACHE": PrivateDir + "/gocache", "GOPLSCACHE": PrivateDir + "/gopls", "XDG_CACHE_HOME": PrivateDir + "/cache",
		},
	},
	{
		Name: "python", ID: "python", Server: "pylsp", Extensions: []string{".py", ".pyi"},
		Install: "pip install python-lsp-server (Debian: apt-get install python3-pylsp)",
		Env:     map[string]string{"XDG_CACHE_HOME": PrivateDir + "/cache"},
	},
	{
		Name: "typescript", ID: "typescript", Server: "typescript-language-server", Args: []string{"--stdio"},
		Extensions: []string{".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"},
		IDs: map[string]string{".tsx": "typescriptreact", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
			".jsx": "javascriptreact"},
		Install: "npm install -g typescript-language-server typescript",
		Env:     map[string]string{"XDG_CACHE_HOME": PrivateDir + "/cache"},
		// Automatic type acquisition would run npm to fetch @types
		// packages: navigation never fetches. Without a syntax server,
		// every request waits for the project to load instead of
		// answering from the syntax alone while it loads (a definition
		// would then stop at the import).
		InitOptions: map[string]any{"disableAutomaticTypingAcquisition": true, "tsserver": map[string]any{"useSyntaxServer": "never"}},
	},
}

// LanguageOf returns the language of a file among langs by its name's
// extension.
func LanguageOf(langs []Language, name string) (Language, bool) {
	ext := strings.ToLower(path.Ext(name))
	for _, l := range langs {
		for _, e := range l.Extensions {
			if e == ext {
				return l, true
			}
		}
	}
	return Language{}, false
}

// LanguageNamed returns the language of langs called name.
func LanguageNamed(langs []Language, name string) (Language, bool) {
	for _, l := range langs {
		if l.Name == name {
			return l, true
		}
	}
	return Language{}, false
}

// lookServer finds l's server (an absolute path is taken as is) on env's PATH, then in the Go binary
// directory ($GOPATH/bin, else $HOME/go/bin) where `go install` puts it.
func lookServer(l Language, env []string) (string, bool) {
	if filepath.IsAbs(l.Server) {
		st, err := os.Stat(l.Server)
		return l.Server, err == nil && st.Mode().IsRegular()
	}
	if p, err := runner.LookPath(l.Server, env); err == nil {
		return p, true
	}
	var dirs []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOPATH="); ok && v != "" {
			dirs = append(dirs, filepath.Join(strings.Split(v, string(os.PathListSeparator))[0], "bin"))
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && v != "" {
			dirs = append(dirs, filepath.Join(v, "go", "bin"))
		}
	}
	for _, d := range dirs {
		cand := filepath.Join(d, l.Server)
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return cand, true
		}
	}
	return "", false
}
