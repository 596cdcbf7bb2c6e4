package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func mustCall(t *testing.T, base, tool string, args map[string]any) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := callTool(ctx, base, tool, args, "")
	if err != nil || !r.Success {
		t.Fatalf("%s: %v %+v", tool, err, r.Error)
	}
	return r.Output
}

func field(t *testing.T, raw json.RawMessage, path ...string) string {
	t.Helper()
	var v any
	json.Unmarshal(raw, &v)
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %v in %s", path, raw)
		}
		v = m[p]
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("no %v in %s", path, raw)
	}
	return s
}
