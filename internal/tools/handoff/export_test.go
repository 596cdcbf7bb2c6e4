package handoff

// ParseStatusForTest exposes parseStatus to the external tests.
var ParseStatusForTest = parseStatus
