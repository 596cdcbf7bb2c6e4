package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/project"
)

func newProjectCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "Register, list and remove local projects"}
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
				fmt.Fprintln(tw, "ID\tROOT\tADDED\tSANDBOX")
				for _, p := range ps {
					sb := p.Sandbox
					if sb == "" {
						sb = "default"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.Root, p.AddedAt.Format("2006-01-02 15:04"), sb)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	remove := &cobra.Command{
		Use:   "remove ID|NAME",
		Short: "Unregister a project (its files are not touched)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withProjects(cmd.Context(), g, func(r *project.Registry) error {
				id := args[0]
				if !strings.Contains(id, ":") {
					id = project.LocalID(id)
				}
				if err := r.Unregister(cmd.Context(), id); err != nil {
					return err
				}
				fprintf(cmd.OutOrStdout(), "Removed %s\n", id)
				return nil
			})
		},
	}
	cmd.AddCommand(add, list, remove)
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
