// Package requestid gives every HTTP request an id that ties its response
// header, its log lines, its trace span and its Action Audit event
// together. An inbound X-Request-Id is kept only when it is well formed
// (ident.Valid: 1-64 letters, digits, '.', '_' or '-', starting with a
// letter or digit); any other value, or none, is replaced by a new id, so
// that an id never carries a caller's arbitrary text into a log or span.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"github.com/webcodex/webcodex/internal/ident"
)

// Header is the request and response header that carries the id.
const Header = "X-Request-Id"

// MaxBytes bounds an accepted inbound id.
const MaxBytes = ident.MaxBytes

// generatedBytes is the randomness of a generated id (hex-encoded: 32
// characters, "req_" before them).
const generatedBytes = 16

// LogKey is the attribute name of the id in log lines.
const LogKey = "request_id"

// New returns a fresh id: "req_" and 32 random hex digits.
func New() string {
	var b [generatedBytes]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// Accept returns inbound when it is a well-formed id of at most MaxBytes,
// else a new one.
func Accept(inbound string) string {
	if len(inbound) <= MaxBytes && ident.Valid(inbound) {
		return inbound
	}
	return New()
}

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the id in ctx, "" when there is none.
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Handler is a slog.Handler that adds the request id of the record's
// context (when it has one) to every record logged with a context
// (InfoContext, WarnContext, ...).
type Handler struct{ slog.Handler }

// NewHandler wraps h.
func NewHandler(h slog.Handler) *Handler { return &Handler{Handler: h} }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r.AddAttrs(slog.String(LogKey, id))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{Handler: h.Handler.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{Handler: h.Handler.WithGroup(name)}
}
