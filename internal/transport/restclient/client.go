// Package restclient is the one typed client CLI verbs use to call tools
// on a running server over REST (POST /api/tools/call).
package restclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/transport/rest"
)

// Bounds of the client.
const (
	// Timeout bounds one call.
	Timeout = 60 * time.Second
	// MaxResponseBytes bounds a response body.
	MaxResponseBytes = 8 << 20
)

// Client calls tools on the server at Base with the bearer Token.
type Client struct {
	Base  string
	Token string
	HTTP  *http.Client
}

// Call calls tool with args and decodes a successful output into out. A
// failed ToolResult is returned as a *failure.Error with its kind and
// message; a transport failure as an error naming the server.
func (c *Client) Call(ctx context.Context, tool string, args, out any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	body, err := json.Marshal(rest.CallRequest{Tool: tool, Arguments: raw})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.Base, "/")+"/api/tools/call", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("server %s: %w", c.Base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if err != nil {
		return fmt.Errorf("server %s: %w", c.Base, err)
	}
	var res struct {
		Success bool            `json:"success"`
		Output  json.RawMessage `json:"output"`
		Error   *struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("server %s answered HTTP %d with a body that is not a tool result", c.Base, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK || !res.Success {
		if res.Error != nil {
			return failure.New(failure.Kind(res.Error.Kind), "%s", res.Error.Message)
		}
		return fmt.Errorf("server %s answered HTTP %d", c.Base, resp.StatusCode)
	}
	return json.Unmarshal(res.Output, out)
}
