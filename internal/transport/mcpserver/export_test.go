package mcpserver

// Report is report, for the benchmarks that put a bare go-sdk server
// behind the audit middleware the way this package puts its own.
var Report = report
