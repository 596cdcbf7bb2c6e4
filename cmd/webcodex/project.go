package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/worktree"
)

func newProjectCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "Register, list, remove and share projects"}
	var sandbox string
	add := &cobra.Command{
		Use:   "add [NAME=]DIR",
		Short: "Register a directory as agent:local:<name>",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withProjects(cmd.Context(), g, func(r *project.Registry) error {
				name, dir := project.ParseSpec(args[0])
				p, err := r.RegisterSandboxed(cmd.Context(), name, dir, sandbox)
				if err != nil {
					return err
				}
				fprintf(cmd.OutOrStdout(), "Registered %s -> %s\n", p.ID, p.Root)
				if p.Sandbox != "" {
					fprintf(cmd.OutOrStdout(), "Sandbox: %s\n", p.Sandbox)
				}
				return nil
			})
		},
	}
	add.Flags().StringVar(&sandbox, "sandbox", "", "sandbox mode for the project's processes: workspace-write, read-only or off (default: the server's)")
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List registered projects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withProjects(cmd.Context(), g, func(r *project.Registry) error {
				ps, err := r.List(cmd.Context())
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if asJSON {
					if ps == nil {
						ps = []project.Project{}
					}
					return writeJSON(w, map[string]any{"projects": ps})
				}
				if len(ps) == 0 {
					fprintf(w, "No projects registered.\n")
					return nil
				}
				tw := table(w)
				fmt.Fprintln(tw, "ID\tROOT\tADDED\tSANDBOX\tWORKTREE OF\tBASE")
				for _, p := range ps {
					sb := p.Sandbox
					if sb == "" {
						sb = "default"
					}
					source, base := "-", "-"
					if p.Worktree() {
						source, base = p.Source, p.BaseCommit[:min(12, len(p.BaseCommit))]
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Root, p.AddedAt.Format("2006-01-02 15:04"), sb, source, base)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var force bool
	remove := &cobra.Command{
		Use:   "remove ID|NAME",
		Short: "Unregister a project (its files are not touched); a managed worktree is also removed",
		Long: "Unregister a project; its files are not touched. A managed worktree (made by work_on_project " +
			"mode=worktree) is removed with git worktree remove and then unregistered; this is refused while a " +
			"Workflow Session on it is active, and git refuses a worktree with changes or untracked files, unless --force.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, cfg, err := g.openStores(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			r := project.NewRegistry(st.Projects, nil)
			id := args[0]
			if !strings.Contains(id, ":") {
				id = project.LocalID(id)
			}
			p, err := r.Get(ctx, id)
			if err != nil {
				return err
			}
			if !p.Worktree() {
				if err := r.Unregister(ctx, id); err != nil {
					return err
				}
				fprintf(cmd.OutOrStdout(), "Removed %s\n", id)
				return nil
			}
			_, active, err := st.Workflow.List(ctx, workflow.ListFilter{Project: id, Lifecycle: workflow.Active, Limit: 1})
			if err != nil {
				return err
			}
			if active > 0 && !force {
				return failure.New(failure.ProjectInUse, "worktree %s has %d active Workflow Session(s); close them or pass --force", id, active)
			}
			pol := cfg.SandboxPolicy()
			defer pol.Close()
			m := &worktree.Manager{Projects: r, Host: &runner.Local{Policy: pol}, Dir: app.WorktreesDir(cfg.DataDir)}
			if err := m.Remove(ctx, p, force); err != nil {
				return err
			}
			fprintf(cmd.OutOrStdout(), "Removed worktree %s (%s)\n", id, p.Root)
			return nil
		},
	}
	remove.Flags().BoolVar(&force, "force", false, "remove a worktree even with an active session or uncommitted changes")
	cmd.AddCommand(add, list, remove, newProjectShareCmd(g))
	return cmd
}

func withProjects(ctx context.Context, g *globals, fn func(*project.Registry) error) error {
	st, _, err := g.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(project.NewRegistry(st.Projects, nil))
}
