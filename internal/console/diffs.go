package console

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/workflow"
)

// DiffSummary is the newest recorded change of one changed path, read
// from the diff fact (workflow.DiffFactPrefix) its edit call left in its
// tool_call_finished event: the change's added and removed line counts
// and its first lines, redacted and cut to workflow.FactMaxChars when the
// event was stored.
type DiffSummary struct {
	Added, Removed int
	// Lines are the first lines of the change: hunk headers, removed and
	// added lines, each with its kind for the page to mark.
	Lines []DiffLine
	// Partial is true when Lines do not show every changed line.
	Partial bool
}

// DiffLine is one line of a change excerpt; Kind is "hunk", "del" or
// "add" (the text keeps its "@@", "-" or "+").
type DiffLine struct {
	Kind, Text string
}

// diffSummaries returns, for each path whose change an edit call
// summarized among evs (ledger order), the newest summary. Facts that do
// not parse are ignored.
func diffSummaries(evs []workflow.Event) map[string]*DiffSummary {
	out := map[string]*DiffSummary{}
	for _, e := range evs {
		if e.Kind != workflow.EventToolCallFinished || e.Outcome != workflow.OutcomeOK {
			continue
		}
		for k, v := range e.Facts {
			if !strings.HasPrefix(k, workflow.DiffFactPrefix) {
				continue
			}
			if path, d, ok := parseDiffFact(v); ok {
				out[path] = d
			}
		}
	}
	return out
}

// parseDiffFact reads a diff fact's value: "+<added> -<removed> <path>",
// then the change's lines.
func parseDiffFact(v string) (string, *DiffSummary, bool) {
	head, body, _ := strings.Cut(v, "\n")
	fields := strings.SplitN(head, " ", 3)
	if len(fields) != 3 || !strings.HasPrefix(fields[0], "+") || !strings.HasPrefix(fields[1], "-") || fields[2] == "" {
		return "", nil, false
	}
	added, err1 := strconv.Atoi(fields[0][1:])
	removed, err2 := strconv.Atoi(fields[1][1:])
	if err1 != nil || err2 != nil || added < 0 || removed < 0 {
		return "", nil, false
	}
	d := &DiffSummary{Added: added, Removed: removed}
	changed := 0
	for line := range strings.SplitSeq(strings.TrimSuffix(body, "\n"), "\n") {
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "@@"):
			d.Lines = append(d.Lines, DiffLine{Kind: "hunk", Text: line})
		case strings.HasPrefix(line, "-"):
			d.Lines = append(d.Lines, DiffLine{Kind: "del", Text: line})
			changed++
		case strings.HasPrefix(line, "+"):
			d.Lines = append(d.Lines, DiffLine{Kind: "add", Text: line})
			changed++
		default: // "\ No newline at end of file"
			d.Lines = append(d.Lines, DiffLine{Kind: "hunk", Text: line})
		}
	}
	// The stored value was cut at FactMaxChars: its last line may be cut
	// too, and lines may be missing.
	d.Partial = changed < added+removed || utf8.RuneCountInString(v) >= workflow.FactMaxChars
	return fields[2], d, true
}
