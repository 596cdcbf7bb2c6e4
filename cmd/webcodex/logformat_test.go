package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/requestid"
)

func TestLogFormat(t *testing.T) {
	cfg := app.DefaultConfig()
	var buf bytes.Buffer
	log, err := newFormatLogger(&buf, cfg, logJSON)
	if err != nil {
		t.Fatal(err)
	}
	log.InfoContext(requestid.With(context.Background(), "rid-7"), "hello")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "hello" || line[requestid.LogKey] != "rid-7" {
		t.Fatalf("JSON line %q: %v", buf.String(), err)
	}
	buf.Reset()
	if _, err := newFormatLogger(&buf, cfg, logText); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "JSON", "xml"} {
		if _, err := newFormatLogger(&buf, cfg, bad); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("--log-format %q: %v, want invalid_arguments", bad, err)
		}
	}
	if buf.Len() != 0 {
		t.Fatalf("a refused format wrote %q", buf.String())
	}
}
