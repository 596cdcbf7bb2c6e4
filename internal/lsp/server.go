package lsp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// MaxOpenDocuments bounds the documents a server holds open; past it
// every one is closed before the next is opened.
const MaxOpenDocuments = 256

// server is one running language server for one project root.
type server struct {
	lang    Language
	root    string
	cmd     *exec.Cmd
	unit    *runner.Unit
	conn    *conn
	exited  chan struct{}
	enc     string
	private string
	owned   bool // private is a temporary directory removed at stop
	mode    runner.Mode

	mu   sync.Mutex // guards docs
	docs map[string]document

	stopOnce sync.Once
}

// document is what the server was last told about an open document.
type document struct {
	version int
	sum     [sha256.Size]byte
}

// fileURI is the file URI of an absolute path.
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// uriPath is the absolute path of a file URI ("" for another scheme).
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:] // a Windows drive path
	}
	return filepath.FromSlash(p)
}

// start starts l's server for root, confined read-only to the project
// with its private directory writable, contained, and initializes it.
func (m *Manager) start(ctx context.Context, l Language, root string) (s *server, err error) {
	env := runner.ChildEnv(m.getenv, nil)
	bin, ok := lookServer(l, env)
	if !ok {
		return nil, failure.New(failure.LanguageServerUnavailable,
			"no %s language server: %s is not on the PATH; install it (%s)", l.Name, l.Server, l.Install).
			WithDetail("server", l.Server)
	}
	s = &server{lang: l, root: root, exited: make(chan struct{}), docs: map[string]document{}}
	if m.opt.CacheRoot != "" {
		sum := sha256.Sum256([]byte(root))
		s.private = filepath.Join(m.opt.CacheRoot, fmt.Sprintf("%s-%x", l.Name, sum[:8]))
		err = os.MkdirAll(s.private, 0o700)
	} else {
		s.private, err = os.MkdirTemp("", "webcodex-lsp-")
		s.owned = true
	}
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot make the language server's private directory")
	}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	// The private directory's tmp is the server's TMPDIR (gopls writes
	// overlays there for the go command).
	if err = os.MkdirAll(filepath.Join(s.private, "tmp"), 0o700); err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot make the language server's private directory")
	}
	add := map[string]string{"TMPDIR": filepath.Join(s.private, "tmp")}
	for k, v := range l.Env {
		add[k] = strings.ReplaceAll(v, PrivateDir, s.private)
	}
	conf, err := m.opt.Sandbox.Confine(runner.Sandbox{Mode: runner.ReadOnly, Project: root, Write: []string{s.private}, Exact: true})
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot confine %s", l.Server)
	}
	defer conf.Close(m.opt.Sandbox)
	s.mode = conf.Mode()
	cmd := exec.Command(bin, l.Args...)
	cmd.Dir, cmd.Env, cmd.SysProcAttr = root, conf.Env(runner.ChildEnv(m.getenv, add)), groupAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot start %s", l.Server)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot start %s", l.Server)
	}
	contain := m.opt.Contain
	if contain == nil {
		contain = runner.Setup()
	}
	if s.unit, err = contain.Start(cmd, runner.NewRunID(), conf.Start); err != nil {
		return nil, failure.Wrap(failure.NotStarted, err, "cannot start %s", l.Server)
	}
	s.cmd = cmd
	s.conn = newConn(stdin, stdout)
	go func() {
		<-s.conn.done // stdout closed: the server is ending
		cmd.Wait()
		s.unit.Release()
		close(s.exited)
	}()
	if err := s.initialize(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// initialize runs the LSP handshake and records the position encoding
// the server chose.
func (s *server) initialize(ctx context.Context) error {
	// No processId: a server that watches its client's pid (the
	// typescript-language-server does) would find it gone from inside a
	// Landlock domain that scopes signals, and exit.
	params := map[string]any{
		"processId": nil,
		"rootUri":   fileURI(s.root),
		"workspaceFolders": []map[string]string{
			{"uri": fileURI(s.root), "name": filepath.Base(s.root)},
		},
		"capabilities": map[string]any{
			"general": map[string]any{"positionEncodings": []string{UTF16, UTF8, UTF32}},
			"textDocument": map[string]any{
				"hover":              map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
				"definition":         map[string]any{"linkSupport": true},
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"publishDiagnostics": map[string]any{"versionSupport": true},
				"synchronization":    map[string]any{"didSave": false},
			},
			"workspace": map[string]any{"configuration": true, "workspaceFolders": true},
		},
	}
	if s.lang.InitOptions != nil {
		params["initializationOptions"] = s.lang.InitOptions
	}
	var res struct {
		Capabilities struct {
			PositionEncoding string `json:"positionEncoding"`
		} `json:"capabilities"`
	}
	if err := s.conn.call(ctx, "initialize", params, &res); err != nil {
		return s.failed(err, "initialize")
	}
	switch res.Capabilities.PositionEncoding {
	case UTF8, UTF32:
		s.enc = res.Capabilities.PositionEncoding
	default:
		s.enc = UTF16
	}
	if err := s.conn.notify("initialized", map[string]any{}); err != nil {
		return s.failed(err, "initialized")
	}
	return nil
}

// failed turns a request's error into the call's failure: the server
// ended, did not answer in time (it is then stopped), or answered with an
// error.
func (s *server) failed(err error, method string) error {
	var rerr *rpcError
	switch {
	case errors.As(err, &rerr):
		return failure.Wrap(failure.OperationFailed, err, "%s answered %s with an error: %s", s.lang.Server, method, rerr.Message)
	case errors.Is(err, context.DeadlineExceeded):
		s.stop()
		return failure.Wrap(failure.TimedOut, err, "%s did not answer %s in time; it was stopped and starts again on the next call", s.lang.Server, method).
			WithDetail("outcome", "server_killed")
	case errors.Is(err, context.Canceled):
		return failure.Wrap(failure.Cancelled, err, "the %s request was cancelled", method)
	case errors.Is(err, errClosed):
		return failure.Wrap(failure.OperationFailed, err, "%s exited during %s; it starts again on the next call", s.lang.Server, method).
			WithDetail("outcome", "server_exited")
	}
	return failure.Wrap(failure.OperationFailed, err, "%s: %s failed", s.lang.Server, method)
}

// alive reports whether the server is still serving: its process has not
// ended nor closed its output.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	case <-s.conn.done:
		return false
	default:
		return true
	}
}

// stop kills the server and everything it started and removes a
// temporary private directory; it may be called more than once.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		if s.unit != nil {
			s.unit.Kill()
			if s.cmd.Process != nil {
				s.cmd.Process.Kill()
			}
			<-s.exited
		}
		if s.owned && s.private != "" {
			os.RemoveAll(s.private)
		}
	})
}

// sync tells the server the current text of the document abs: opened the
// first time, replaced when it changed since. It returns the document's
// version.
func (s *server) sync(abs string, text []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uri := fileURI(abs)
	sum := sha256.Sum256(text)
	d, open := s.docs[uri]
	if open && d.sum == sum {
		return d.version, nil
	}
	if !open && len(s.docs) >= MaxOpenDocuments {
		for u := range s.docs {
			s.conn.notify("textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": u}})
		}
		s.docs = map[string]document{}
	}
	// Diagnostics published before this text are stale: a server that
	// does not version them must publish again before diagnostics answer.
	s.conn.forget(uri)
	var err error
	if open {
		d = document{version: d.version + 1, sum: sum}
		err = s.conn.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": d.version},
			"contentChanges": []map[string]string{{"text": string(text)}},
		})
	} else {
		d = document{version: 1, sum: sum}
		err = s.conn.notify("textDocument/didOpen", map[string]any{
			"textDocument": map[string]any{"uri": uri, "languageId": s.lang.DocumentID(abs), "version": d.version, "text": string(text)},
		})
	}
	if err != nil {
		return 0, s.failed(err, "document sync")
	}
	s.docs[uri] = d
	return d.version, nil
}

// request sends method and decodes its result, bounded by ctx.
func (s *server) request(ctx context.Context, method string, params, result any) error {
	if err := s.conn.call(ctx, method, params, result); err != nil {
		return s.failed(err, method)
	}
	return nil
}

// rawRequest is request with the result left encoded.
func (s *server) rawRequest(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	err := s.request(ctx, method, params, &raw)
	return raw, err
}
