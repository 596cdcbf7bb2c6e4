package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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
// JSON gets a JSON-RPC parse error rather than plain text. The body is
// bounded by maxBody.
func prefilter(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		trimmed := bytes.TrimLeft(body, " \t\r\n")
		switch {
		case len(trimmed) > 0 && trimmed[0] == '[':
			rpcError(w, codeInvalidRequest, "JSON-RPC batches are not supported: send one message per request")
			return
		case !json.Valid(body):
			rpcError(w, codeParseError, "the request body is not valid JSON")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func rpcError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg},
	})
}
