package auditmw

import "testing"

func TestFailedJSON(t *testing.T) {
	for body, want := range map[string]bool{
		`{"success":true,"output":{"x":1}}`:              false,
		`{"success":false,"error":{"kind":"not_found"}}`: true,
		`{"tools":[]}`: false,
		`{"jsonrpc":"2.0","id":1,"result":{"isError":true}}`:            true,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601}}`:              true,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"error":null}`: false,
		`{"success":true,"output":"trunc`:                               false,
		`not json`:                                                      false,
	} {
		if got := failedJSON([]byte(body)); got != want {
			t.Errorf("failedJSON(%s) = %v, want %v", body, got, want)
		}
	}
}

func TestIsNotification(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`: true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`:         false,
		`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`:      false,
		`not json`: false,
	} {
		if got := isNotification([]byte(body)); got != want {
			t.Errorf("isNotification(%s) = %v, want %v", body, got, want)
		}
	}
}

var leadingSeeds = []string{
	`{"success":true,"output":{"x":1}}`, `{"success":false,"error":{"kind":"x"}}`, `{"success":true}`,
	`{"success":false}`, `{"success":true `, `{"success":true`, `{"success":truex`, `{"success":tru`,
	`{"success":true]`, `{"success":false,`, `{"success": true,`, `{"success":"true"}`, `{"succes":true}`,
	"{\"success\":true\n,\"error\":{}}", `{"success":true,"success":false}`, `{"success":null}`,
}

// The fast path answers only where the full scan gives the same answer.
func TestLeadingSuccessAgreesWithScan(t *testing.T) {
	for _, s := range leadingSeeds {
		if v, ok := leadingSuccess([]byte(s)); ok && !v != scanFailedJSON([]byte(s)) {
			t.Errorf("leadingSuccess(%s) = %v, scan failed = %v", s, v, scanFailedJSON([]byte(s)))
		}
	}
}

func FuzzLeadingSuccessAgreesWithScan(f *testing.F) {
	for _, s := range leadingSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, ok := leadingSuccess(b); ok && !v != scanFailedJSON(b) {
			t.Fatalf("leadingSuccess(%q) = %v, scan failed = %v", b, v, scanFailedJSON(b))
		}
	})
}
