package clientmeta_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
)

// httpDate formats t as an HTTP date.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// freshnessCases are response headers and the lifetime they give a
// document received at testNow.
var freshnessCases = []struct {
	name   string
	header map[string][]string
	want   time.Duration
}{
	{"no cache headers", nil, clientmeta.DefaultCacheTTL},
	{"max-age", map[string][]string{"Cache-Control": {"max-age=600"}}, 10 * time.Minute},
	{"max-age among others", map[string][]string{"Cache-Control": {"public, MAX-AGE=7200, must-revalidate"}}, 2 * time.Hour},
	{"max-age quoted", map[string][]string{"Cache-Control": {`max-age="600"`}}, 10 * time.Minute},
	{"max-age less Age", map[string][]string{"Cache-Control": {"max-age=3600"}, "Age": {"600"}}, 50 * time.Minute},
	{"max-age over two lines, first wins", map[string][]string{"Cache-Control": {"public", "max-age=300", "max-age=900"}}, 5 * time.Minute},
	{"max-age beats Expires", map[string][]string{
		"Cache-Control": {"max-age=300"}, "Date": {httpDate(testNow)}, "Expires": {httpDate(testNow.Add(3 * time.Hour))},
	}, 5 * time.Minute},
	{"malformed max-age is stale", map[string][]string{"Cache-Control": {"max-age=soon"}}, clientmeta.MinCacheTTL},
	{"negative max-age is stale", map[string][]string{"Cache-Control": {"max-age=-5"}}, clientmeta.MinCacheTTL},
	{"no-store", map[string][]string{"Cache-Control": {"no-store"}}, clientmeta.MinCacheTTL},
	{"no-cache with max-age", map[string][]string{"Cache-Control": {"max-age=3600, no-cache"}}, clientmeta.MinCacheTTL},
	{"no-cache with a field name", map[string][]string{"Cache-Control": {`no-cache="Set-Cookie"`}}, clientmeta.MinCacheTTL},
	{"no-store with Expires", map[string][]string{"Cache-Control": {"no-store"}, "Expires": {httpDate(testNow.Add(3 * time.Hour))}}, clientmeta.MinCacheTTL},
	{"Expires from Date", map[string][]string{"Date": {httpDate(testNow.Add(-time.Hour))}, "Expires": {httpDate(testNow.Add(time.Hour))}}, 2 * time.Hour},
	{"Expires from Date less Age", map[string][]string{
		"Date": {httpDate(testNow)}, "Expires": {httpDate(testNow.Add(time.Hour))}, "Age": {"900"},
	}, 45 * time.Minute},
	{"Age without max-age or Expires", map[string][]string{"Age": {"900"}}, clientmeta.DefaultCacheTTL},
	{"Expires without Date", map[string][]string{"Expires": {httpDate(testNow.Add(90 * time.Minute))}}, 90 * time.Minute},
	{"Expires in the past", map[string][]string{"Date": {httpDate(testNow)}, "Expires": {httpDate(testNow.Add(-time.Hour))}}, clientmeta.MinCacheTTL},
	{"malformed Expires is stale", map[string][]string{"Date": {httpDate(testNow)}, "Expires": {"0"}}, clientmeta.MinCacheTTL},
	{"clamped below", map[string][]string{"Cache-Control": {"max-age=10"}}, clientmeta.MinCacheTTL},
	{"max-age 0", map[string][]string{"Cache-Control": {"max-age=0"}}, clientmeta.MinCacheTTL},
	{"clamped above", map[string][]string{"Cache-Control": {"max-age=31536000"}}, clientmeta.MaxCacheTTL},
	{"max-age beyond int64", map[string][]string{"Cache-Control": {"max-age=99999999999999999999999"}}, clientmeta.MaxCacheTTL},
	{"Expires clamped above", map[string][]string{"Date": {httpDate(testNow)}, "Expires": {httpDate(testNow.Add(30 * 24 * time.Hour))}}, clientmeta.MaxCacheTTL},
	{"Age beyond max-age", map[string][]string{"Cache-Control": {"max-age=600"}, "Age": {"99999999999999999999"}}, clientmeta.MinCacheTTL},
}

func TestFreshness(t *testing.T) {
	for _, c := range freshnessCases {
		if got := clientmeta.Freshness(http.Header(c.header), testNow); got != c.want {
			t.Errorf("%s: Freshness = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFetchFreshness: Fetch returns the time of Freshness for the headers
// a real server sent.
func TestFetchFreshness(t *testing.T) {
	var header shared[map[string][]string]
	var s *docServer
	s = newDocServer(t, func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header.get() {
			w.Header()[k] = v
		}
		if _, ok := header.get()["Date"]; !ok {
			w.Header()["Date"] = nil // the server's own Date is the real clock, not testNow
		}
		serveJSON(t, w, validDoc(s.id()))
	})
	f := s.fetcher()
	for _, c := range freshnessCases {
		t.Run(c.name, func(t *testing.T) {
			header.set(c.header)
			_, fresh, err := fetch(t, f, s.id())
			if err != nil {
				t.Fatal(err)
			}
			if want := testNow.Add(c.want); !fresh.Equal(want) {
				t.Fatalf("fresh until %v, want %v", fresh, want)
			}
		})
	}
}

// TestCacheBounds: the bounds are ordered as their contract says.
func TestCacheBounds(t *testing.T) {
	if !(clientmeta.MinCacheTTL == time.Minute && clientmeta.MinCacheTTL <= clientmeta.DefaultCacheTTL &&
		clientmeta.DefaultCacheTTL <= clientmeta.MaxCacheTTL && clientmeta.MaxCacheTTL == 24*time.Hour) {
		t.Fatal("cache bounds out of order")
	}
}
