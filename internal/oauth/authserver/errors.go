package authserver

import (
	"errors"
	"fmt"
)

// ErrorCode is an OAuth error code (RFC 6749 §4.1.2.1 and §5.2, RFC 7591
// §3.2.2, RFC 7009 §2.2.1).
type ErrorCode string

// The error codes the server answers with.
const (
	ErrInvalidRequest          ErrorCode = "invalid_request"
	ErrInvalidClient           ErrorCode = "invalid_client"
	ErrInvalidGrant            ErrorCode = "invalid_grant"
	ErrUnauthorizedClient      ErrorCode = "unauthorized_client"
	ErrUnsupportedGrantType    ErrorCode = "unsupported_grant_type"
	ErrUnsupportedResponseType ErrorCode = "unsupported_response_type"
	ErrInvalidScope            ErrorCode = "invalid_scope"
	ErrInvalidTarget           ErrorCode = "invalid_target" // RFC 8707
	ErrAccessDenied            ErrorCode = "access_denied"
	ErrServerError             ErrorCode = "server_error"
	ErrTemporarilyUnavailable  ErrorCode = "temporarily_unavailable"
	ErrInvalidRedirectURI      ErrorCode = "invalid_redirect_uri"    // RFC 7591
	ErrInvalidClientMetadata   ErrorCode = "invalid_client_metadata" // RFC 7591
	ErrUnsupportedTokenType    ErrorCode = "unsupported_token_type"  // RFC 7009
)

// An Error is a refusal in OAuth's terms. Description is safe to show to
// the client and the person (it never holds a secret).
type Error struct {
	Code        ErrorCode
	Description string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Description }

// refuse returns an *Error.
func refuse(code ErrorCode, format string, args ...any) error {
	return &Error{Code: code, Description: fmt.Sprintf(format, args...)}
}

// CodeOf returns err's OAuth error code: its own for an *Error,
// ErrServerError for any other error, "" for nil.
func CodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ErrServerError
}
