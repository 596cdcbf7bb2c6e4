package console

import "github.com/webcodex/webcodex/internal/workflow"

// ValidationView is a session's validation picture as the session page
// and the export show it: workflow.SummarizeValidation over the retained
// ledger, with the failure message of each failing test not yet proven
// passing.
type ValidationView struct {
	workflow.ValidationState
	// Unresolved are the state's unresolved failures, each with its
	// message.
	Unresolved []UnresolvedView
}

// UnresolvedView is a failing test not yet proven passing, with the
// message the run that last saw it fail recorded for it: the runner's own
// words, redacted and bounded (workflow.ValidationMessageMaxChars) when
// the record was written; "" when that run kept none (only the first
// workflow.MaxValidationMessages failures of a run keep one, and only the
// Go and JUnit parsers report them).
type UnresolvedView struct {
	workflow.UnresolvedFailure
	Message string
}

// validationView summarizes the validation records among evs (in ledger
// order) and finds each unresolved failure's message in the record of
// the run that last saw it fail.
func validationView(evs []workflow.Event) ValidationView {
	st := workflow.SummarizeValidation(evs)
	v := ValidationView{ValidationState: st, Unresolved: make([]UnresolvedView, 0, len(st.Unresolved))}
	bySeq := map[int64]*workflow.Validation{}
	for _, u := range st.Unresolved {
		bySeq[u.LastSeenSeq] = nil
	}
	for _, e := range evs {
		if _, wanted := bySeq[e.Seq]; wanted && e.Validation != nil {
			bySeq[e.Seq] = e.Validation
		}
	}
	for _, u := range st.Unresolved {
		uv := UnresolvedView{UnresolvedFailure: u}
		if rec := bySeq[u.LastSeenSeq]; rec != nil {
			for _, m := range rec.FailureMessages {
				if m.ID == u.ID {
					uv.Message = m.Message
					break
				}
			}
		}
		v.Unresolved = append(v.Unresolved, uv)
	}
	return v
}

// MessageOf returns the message of unresolved failure id (the first of
// that identity, in any scope), "" when it has none.
func (v ValidationView) MessageOf(id string) string {
	for _, u := range v.Unresolved {
		if u.ID == id && u.Message != "" {
			return u.Message
		}
	}
	return ""
}
