package audit

import "sort"

// StatsBuilder accumulates scanned events into a [Stats]; stores use it so
// that every implementation aggregates the same way.
type StatsBuilder struct {
	st      Stats
	files   map[string]struct{}
	jobs    map[string]struct{}
	clients map[string]int64
}

// NewStatsBuilder returns an empty builder.
func NewStatsBuilder() *StatsBuilder {
	return &StatsBuilder{
		st: Stats{
			ByEndpoint: map[string]int64{}, ByProject: map[string]int64{}, ByStatus: map[string]int64{}, ByCategory: map[string]int64{},
			Attribution: AttributionStats{ByPrincipalKind: map[string]int64{}, ByOAuthClient: []OAuthClientUsage{}},
		},
		files: map[string]struct{}{}, jobs: map[string]struct{}{}, clients: map[string]int64{},
	}
}

// AddSession records the coverage of one scanned session: available
// retained events and how many were scanned.
func (b *StatsBuilder) AddSession(available, scanned int64) {
	b.st.SessionsScanned++
	b.st.EventsAvailable += available
	if scanned < available {
		b.st.TruncatedSessions++
	}
}

// Add aggregates one scanned event.
func (b *StatsBuilder) Add(e Event) {
	b.st.EventsScanned++
	b.st.ByEndpoint[e.Endpoint]++
	b.st.ByProject[e.Project]++
	b.st.ByStatus[e.Status]++
	b.st.ByCategory[category(e)]++
	if e.Attribution.PrincipalKind != "" {
		b.st.Attribution.AttributedCount++
		b.st.Attribution.ByPrincipalKind[e.Attribution.PrincipalKind]++
	} else {
		b.st.Attribution.UnattributedCount++
	}
	if e.Attribution.OAuthClientID != "" {
		b.clients[e.Attribution.OAuthClientID]++
	}
	for _, f := range e.ChangedFiles {
		b.files[f] = struct{}{}
	}
	for k, v := range e.IDs {
		if JobIDCount(map[string]string{k: v}) > 0 {
			b.jobs[v] = struct{}{}
		}
	}
}

// Result returns the aggregate; sessionsAvailable is how many sessions
// were in scope.
func (b *StatsBuilder) Result(sessionsAvailable int64) Stats {
	st := b.st
	st.SessionsAvailable = sessionsAvailable
	st.ChangedFilesDistinctCount = int64(len(b.files))
	st.JobIDsDistinctCount = int64(len(b.jobs))
	for id, n := range b.clients {
		st.Attribution.ByOAuthClient = append(st.Attribution.ByOAuthClient, OAuthClientUsage{ClientID: id, Count: n})
	}
	sort.Slice(st.Attribution.ByOAuthClient, func(i, j int) bool {
		a, c := st.Attribution.ByOAuthClient[i], st.Attribution.ByOAuthClient[j]
		if a.Count != c.Count {
			return a.Count > c.Count
		}
		return a.ClientID < c.ClientID
	})
	st.Truncated = st.TruncatedSessions > 0
	st.Partial = st.Truncated || st.EventsScanned < st.EventsAvailable || st.SessionsScanned < sessionsAvailable
	return st
}

// category is the stats category of an event: the tool category of a
// model tool call (summary.model_ergonomics.tool_category), otherwise the
// event's operation (tools_list, mcp_tools_list, mcp, ...).
func category(e Event) string {
	if m, ok := e.Summary[SummaryErgonomics].(map[string]any); ok {
		if c, ok := m["tool_category"].(string); ok && c != "" {
			return c
		}
	}
	return e.Operation
}
