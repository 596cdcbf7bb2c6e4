package console

import (
	"net/http"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/intent"
)

// The Tasks page shows the viewer's Agent Tasks (decision 0077) the way
// list_agent_tasks and read_agent_task do: the same service, owner (the
// viewer's authority group), project reach and scope (project:read). It
// groups them by state, newest attempt first for each shown task. Below
// them, the intents map shows each project's live declared edit intents
// (decision 0079) as list_intents does, overlaps marked.
func init() {
	extraRouteFuncs = append(extraRouteFuncs, func(s *Server) {
		s.handle("GET "+Prefix+"/tasks", s.page(s.tasksPage))
	})
}

// TaskSectionLimit bounds the tasks each state's section shows (their
// total is shown beside it); IntentMapProjects bounds the projects whose
// intents the page shows without a project filter (each shows at most
// intent.MaxProjectIntents).
const (
	TaskSectionLimit  = 20
	IntentMapProjects = 10
)

// taskStates are the sections of the Tasks page, in order.
var taskStates = []agenttask.State{agenttask.Claimed, agenttask.Open, agenttask.Failed, agenttask.Done, agenttask.Cancelled}

// TasksData is the model of the Tasks page.
type TasksData struct {
	// Project is the filter ("" for every project the viewer reaches);
	// Projects are the projects to choose from.
	Project  string
	Projects []string
	Sections []TaskSection
	// Limit is TaskSectionLimit.
	Limit int
	// IntentMap is the live intents of the shown projects (at most
	// IntentMapProjects of them; NotMapped counts the others); nil when
	// the server has no intent service.
	IntentMap []ProjectIntents
	NotMapped int
}

// ProjectIntents are one project's live intents, oldest first.
type ProjectIntents struct {
	Project string
	Intents []intent.Listed
}

// TaskSection is the tasks of one state.
type TaskSection struct {
	State agenttask.State
	Tasks []TaskRow
	// Total is how many of the viewer's tasks are in State; Tasks holds
	// at most TaskSectionLimit of them, highest priority then oldest.
	Total int
}

// TaskRow is one task with its attempts as the page shows them.
type TaskRow struct {
	agenttask.Task
	// Live is the task's live attempt (claimed tasks), nil otherwise;
	// LeaseAgeMS is how many milliseconds ago it started and Lapsed whether its lease
	// ended before the page was drawn (the expiry loop has not run yet).
	Live       *agenttask.Attempt
	LeaseAgeMS int64
	Lapsed     bool
	// Expired counts the task's attempts whose lease expired.
	Expired int
	// Last is the newest ended attempt, nil when none ended.
	Last *agenttask.Attempt
}

func (s *Server) tasksPage(w http.ResponseWriter, r *http.Request) error {
	ctx, p := r.Context(), viewerOf(r).Principal
	if err := requireRead(p); err != nil {
		return err
	}
	if s.opts.Tasks == nil {
		return failure.New(failure.Unavailable, "agent tasks are not available on this server")
	}
	d := TasksData{Project: r.URL.Query().Get("project"), Limit: TaskSectionLimit}
	projects, err := s.reachableProjects(r)
	if err != nil {
		return err
	}
	d.Projects = projects
	if p.Project != "" {
		// A project-bound credential sees its project's tasks only.
		d.Project = p.Project
	}
	now := s.opts.Now()
	for _, st := range taskStates {
		tasks, total, err := s.opts.Tasks.List(ctx, agenttask.ListFilter{Owner: p.AuthorityFingerprint(), Project: d.Project,
			State: st, Limit: TaskSectionLimit})
		if err != nil {
			return err
		}
		sec := TaskSection{State: st, Total: total}
		for _, t := range tasks {
			row := TaskRow{Task: t}
			attempts, err := s.opts.Tasks.Attempts(ctx, p.AuthorityFingerprint(), t.ID)
			if err != nil {
				return err
			}
			for i := range attempts {
				a := &attempts[i]
				switch {
				case a.State == agenttask.Live:
					row.Live, row.LeaseAgeMS, row.Lapsed = a, now.Sub(a.StartedAt).Milliseconds(), !a.LeaseUntil.After(now)
				case a.State == agenttask.AttemptExpired:
					row.Expired++
				}
				if a.EndedAt != nil {
					row.Last = a
				}
			}
			sec.Tasks = append(sec.Tasks, row)
		}
		d.Sections = append(d.Sections, sec)
	}
	if err := s.intentMap(r, &d); err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "tasks", "Agent Tasks", "tasks", d)
}

// intentMap fills d's intents map: the filtered project, or the first
// IntentMapProjects reachable projects that have live intents.
func (s *Server) intentMap(r *http.Request, d *TasksData) error {
	if s.opts.Intents == nil {
		return nil
	}
	projects := d.Projects
	if d.Project != "" {
		projects = []string{d.Project}
	}
	owner, now := viewerOf(r).Principal.AuthorityFingerprint(), s.opts.Now()
	for _, p := range projects {
		listed, err := s.opts.Intents.List(r.Context(), owner, p, now)
		if err != nil {
			return err
		}
		switch {
		case len(listed) == 0:
		case len(d.IntentMap) == IntentMapProjects:
			d.NotMapped++
		default:
			d.IntentMap = append(d.IntentMap, ProjectIntents{Project: p, Intents: listed})
		}
	}
	return nil
}
