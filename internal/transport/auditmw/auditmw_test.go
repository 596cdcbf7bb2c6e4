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
