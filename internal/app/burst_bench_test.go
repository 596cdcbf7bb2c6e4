package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
)

// BenchmarkBurstOneToken sends bursts of 32 concurrent REST read_files
// calls on one token (twice its share of request slots) through the whole
// HTTP stack and reports the share of calls refused (refused-%) and the
// median time of a burst (ns/op).
func BenchmarkBurstOneToken(b *testing.B) {
	ctx := context.Background()
	a, _, url, stop := benchServer(b, true)
	defer stop()
	token, _, err := a.Auth.CreateToken(ctx, "burst", "burst-owner", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		b.Fatal(err)
	}
	const burst = 32
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: burst, MaxConnsPerHost: burst}}
	body := []byte(`{"tool":"read_files","arguments":{"project":"agent:local:bench","files":[{"path":"a.txt"}]}}`)
	var calls, refused int
	for b.Loop() {
		var wg sync.WaitGroup
		codes := make(chan int, burst)
		for range burst {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes <- resp.StatusCode
			})
		}
		wg.Wait()
		close(codes)
		for c := range codes {
			calls++
			switch c {
			case http.StatusOK:
			case http.StatusTooManyRequests:
				refused++
			default:
				b.Errorf("HTTP %d", c)
			}
		}
	}
	b.ReportMetric(100*float64(refused)/float64(calls), "refused-%")
}
