package mcpserver

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/webcodex/webcodex/internal/httpserver"
)

// JSON-RPC error codes the pre-filter answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// prefilter checks a POST body before the SDK sees it: it must be one
// JSON-RPC message. JSON-RPC batches are refused outright (they left the
// protocol in 2025-06-18; the SDK would still serve one for a request
// without a version header, letting one HTTP request carry thousands of
// tool calls past the server's concurrency bound), and a body that is not
// JSON gets a JSON-RPC parse error rather than plain text. The body is the
// one the HTTP stack read (httpserver.Body, already bounded).
func prefilter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body := httpserver.Body(r)
		trimmed := bytes.TrimLeft(body, " \t\r\n")
		switch {
		case len(trimmed) > 0 && trimmed[0] == '[':
			rpcError(w, codeInvalidRequest, "JSON-RPC batches are not supported: send one message per request")
			return
		case !json.Valid(body):
			rpcError(w, codeParseError, "the request body is not valid JSON")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func rpcError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg},
	})
}
