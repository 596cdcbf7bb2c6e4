package app

import "github.com/webcodex/webcodex/internal/workflow"

func newSessions(s *Stores) *workflow.Service { return workflow.NewService(s.Workflow, nil) }
