//go:build !linux

package sandboxaudit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// errUnsupported is every answer off Linux: there is no Landlock and no
// audit netlink.
var errUnsupported = fmt.Errorf("sandbox denials are observed on Linux only (this is %s): %w", runtime.GOOS, errors.ErrUnsupported)

// Start fails off Linux.
func Start(context.Context, int) (*Reader, error) { return nil, errUnsupported }

// AuditEnabled fails off Linux.
func AuditEnabled() (bool, error) { return false, errUnsupported }

// SetAuditEnabled fails off Linux.
func SetAuditEnabled(bool) error { return errUnsupported }
