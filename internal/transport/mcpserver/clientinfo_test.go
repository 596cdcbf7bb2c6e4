package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientInfoAgreesWithTheSDK checks clientInfo against
// req.ClientInfo() for _meta client info as it arrives off the wire
// (decoded into generic JSON), including shapes its fast path must leave
// to the SDK.
func TestClientInfoAgreesWithTheSDK(t *testing.T) {
	for name, meta := range map[string]string{
		"name and version":   `{"io.modelcontextprotocol/clientInfo":{"name":"agent","version":"1.2"}}`,
		"all string members": `{"io.modelcontextprotocol/clientInfo":{"name":"a","title":"A","description":"d","version":"3","websiteUrl":"https://x"}}`,
		"no version":         `{"io.modelcontextprotocol/clientInfo":{"name":"a"}}`,
		"empty":              `{"io.modelcontextprotocol/clientInfo":{}}`,
		"icons":              `{"io.modelcontextprotocol/clientInfo":{"name":"a","version":"1","icons":[{"src":"https://x/i.png"}]}}`,
		"other case":         `{"io.modelcontextprotocol/clientInfo":{"Name":"a","version":"1"}}`,
		"number name":        `{"io.modelcontextprotocol/clientInfo":{"name":7,"version":"1"}}`,
		"not an object":      `{"io.modelcontextprotocol/clientInfo":"agent/1"}`,
		"unknown member":     `{"io.modelcontextprotocol/clientInfo":{"name":"a","version":"1","extra":"x"}}`,
		"absent":             `{}`,
		"no meta":            `null`,
	} {
		var m mcp.Meta
		if err := json.Unmarshal([]byte(meta), &m); err != nil {
			t.Fatal(err)
		}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: m, Name: "read_files"}}
		gotName, gotVersion, gotOK := clientInfo(req)
		var wantName, wantVersion string
		ci := req.ClientInfo()
		if ci != nil {
			wantName, wantVersion = ci.Name, ci.Version
		}
		if gotName != wantName || gotVersion != wantVersion || gotOK != (ci != nil) {
			t.Errorf("%s: clientInfo = %q, %q, %v; ClientInfo() = %+v", name, gotName, gotVersion, gotOK, ci)
		}
	}
}
