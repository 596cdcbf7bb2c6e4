package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/goal"
)

// goalJSON is a Goal as the CLI prints it: every authority group's Goals
// are shown to the operator, so the owner fingerprint is included.
type goalJSON struct {
	goal.Goal
	Owner    string        `json:"owner_authority_fingerprint"`
	Progress goal.Progress `json:"progress"`
}

func goalOut(g goal.Goal) goalJSON { return goalJSON{Goal: g, Owner: g.Owner, Progress: g.Progress()} }

func newGoalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "goal", Short: "Inspect Goals (goals.db)"}
	var (
		project, status string
		limit           int
		asJSON          bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List every authority group's Goals, most recently changed first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withGoals(cmd, g, func(svc *goal.Service) error {
				gs, total, err := svc.List(cmd.Context(), goal.ListFilter{AllOwners: true, Project: project, Status: goal.Status(status), Limit: limit})
				if err != nil {
					return err
				}
				return printGoals(cmd.OutOrStdout(), gs, total, asJSON)
			})
		},
	}
	list.Flags().StringVar(&project, "project", "", "only goals bound to this project id")
	list.Flags().StringVar(&status, "status", "", "active, blocked, completed or abandoned")
	list.Flags().IntVar(&limit, "limit", 50, fmt.Sprintf("most goals to list (max %d)", goal.ListMax))
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one Goal, its steps, recovery summary and correlated sessions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withGoals(cmd, g, func(svc *goal.Service) error {
				gl, as, err := svc.Inspect(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return printGoal(cmd.OutOrStdout(), gl, as, showJSON)
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	cmd.AddCommand(list, show)
	return cmd
}

// withGoals opens only goals.db.
func withGoals(cmd *cobra.Command, g *globals, fn func(*goal.Service) error) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	st, closeStore, err := app.OpenGoals(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(goal.NewService(st, nil))
}

func printGoals(w io.Writer, gs []goal.Goal, total int, asJSON bool) error {
	if asJSON {
		out := make([]goalJSON, 0, len(gs))
		for _, gl := range gs {
			out = append(out, goalOut(gl))
		}
		return writeJSON(w, map[string]any{"goals": out, "total": total})
	}
	if len(gs) == 0 {
		fprintf(w, "No goals.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "ID\tPROJECT\tSTATUS\tSTEPS\tREVISION\tUPDATED\tTITLE")
	for _, gl := range gs {
		p := gl.Progress()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", gl.ID, orDash(gl.Project), gl.Status, p.Done, p.Total, gl.Revision,
			gl.UpdatedAt.Local().Format("2006-01-02 15:04"), clip(gl.Title, 50))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if total > len(gs) {
		fprintf(w, "(%d of %d shown)\n", len(gs), total)
	}
	return nil
}

func printGoal(w io.Writer, gl goal.Goal, as []goal.Association, asJSON bool) error {
	if asJSON {
		return writeJSON(w, map[string]any{"goal": goalOut(gl), "sessions": as})
	}
	p := gl.Progress()
	fprintf(w, "Goal       %s\n", gl.ID)
	fprintf(w, "Title      %s\n", gl.Title)
	fprintf(w, "Project    %s\n", orDash(gl.Project))
	fprintf(w, "Status     %s (revision %s)\n", gl.Status, gl.Revision)
	fprintf(w, "Owner      %s\n", gl.Owner)
	fprintf(w, "Created    %s, updated %s\n", gl.CreatedAt.Local().Format(time.RFC3339), gl.UpdatedAt.Local().Format(time.RFC3339))
	if gl.Objective != "" {
		fprintf(w, "Objective  %s\n", gl.Objective)
	}
	fprintf(w, "Steps      %d of %d done\n", p.Done, p.Total)
	for _, s := range gl.Steps {
		fprintf(w, "  [%s] %s\n", s.Status, s.Title)
	}
	if gl.CheckpointedAt != nil {
		fprintf(w, "Checkpoint %d, %s", gl.Checkpoints, gl.CheckpointedAt.Local().Format(time.RFC3339))
		if gl.CheckpointSession != "" {
			fprintf(w, " by %s", gl.CheckpointSession)
		}
		fprintf(w, "\nRecovery   %s\n", gl.RecoverySummary)
	}
	if len(as) == 0 {
		fprintf(w, "Sessions   none\n")
		return nil
	}
	fprintf(w, "Sessions   %d\n", len(as))
	tw := table(w)
	fmt.Fprintln(tw, "  SESSION\tPROJECT\tASSOCIATED")
	for _, a := range as {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.SessionID, a.Project, a.At.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}
