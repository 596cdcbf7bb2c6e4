package app

import (
	"context"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/workflow"
)

// workOnProject is the canonical coding start/resume tool.
const workOnProject = "work_on_project"

// sessionAffinity is the session a successful call explicitly related its
// window to, from the kernel's typed facts: the session a work_on_project
// created or resumed, else the verified recorder; "" for any other call.
func sessionAffinity(res kernel.Result) string {
	switch {
	case !res.Success:
		return ""
	case res.Tool == workOnProject && res.BusinessSession != "":
		return res.BusinessSession
	}
	return res.Recorder
}

// RecorderContinuityGap reports the session a recorder continuity gap
// diagnostic may suggest for call c with result res: the call succeeded,
// is meaningful, carried a window and neither a recorder nor a business
// session (it is recorded nowhere), and the same window,
// principal and exact project had a recent explicit session affinity
// (window.AffinityRecent) whose session is still active, on that project,
// and passes the caller's ordinary authority check. The suggestion is a
// diagnostic only: nothing is recorded in that session and it never
// becomes the call's recorder. The kernel's RecorderGap ambient puts it on
// the ToolResult (recorder_continuity).
func (a *App) RecorderContinuityGap(ctx context.Context, c kernel.Call, res kernel.Result) (string, bool) {
	if a.Windows == nil || !res.Success || c.ClientWindow == "" || c.RecordingSessionID != "" || res.BusinessSession != "" ||
		!window.Meaningful(res.Tool, res.Project, res.Refused) || res.Tool == workOnProject {
		return "", false
	}
	id, ok, err := a.Windows.Affinity(ctx, c.Principal, c.ClientWindow, res.Project)
	if err != nil || !ok {
		return "", false
	}
	v := a.Sessions.ReadClaim(ctx, id).Check(workflow.Check{
		Fingerprint: c.Principal.AuthorityFingerprint(), Project: res.Project, Mutate: true,
	})
	if !v.Verified() {
		return "", false
	}
	return id, true
}

// suggestRecorder is RecorderContinuityGap for an ambient projection.
func (a *App) suggestRecorder(ctx context.Context, c kernel.AmbientCall) (string, bool) {
	return a.RecorderContinuityGap(ctx,
		kernel.Call{Principal: c.Principal, ClientWindow: c.ClientWindow, RecordingSessionID: c.RecordingSessionID},
		kernel.Result{Success: c.Success, Tool: c.Tool, Project: c.Project, BusinessSession: c.BusinessSession})
}
