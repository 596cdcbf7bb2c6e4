package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/project"
)

// newMemoryCmd is `webcodex memory`: Project Memory for people. It opens
// the data directory as the local user; the scope is the project's at its
// current registered root.
func newMemoryCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "memory", Short: "Read, search and delete a project's memory"}
	var projectID string
	cmd.PersistentFlags().StringVar(&projectID, "project", "", "project id (agent:local:NAME) or name (required)")

	var (
		limit  int
		asJSON bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List a project's memory entries, pinned then newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMemory(cmd.Context(), g, projectID, func(svc *memory.Service, sc memory.Scope) error {
				es, total, err := svc.List(cmd.Context(), sc, limit)
				if err != nil {
					return err
				}
				return printMemoryList(cmd.OutOrStdout(), es, total, asJSON)
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 50, fmt.Sprintf("most entries to list (max %d)", memory.MaxListEntries))
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var (
		history  bool
		showJSON bool
	)
	show := &cobra.Command{
		Use:   "show KEY",
		Short: "Show one memory entry (and its kept revisions with --history)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(cmd.Context(), g, projectID, func(svc *memory.Service, sc memory.Scope) error {
				e, h, err := svc.Read(cmd.Context(), memory.ReadParams{Scope: sc, Key: args[0], WithHistory: history})
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if showJSON {
					return writeJSON(w, map[string]any{"entry": e, "history": h})
				}
				fprintf(w, "%s  %s  %s\nrevision %s, updated %s", e.MemoryKey, e.MemoryID, strings.Join(e.Tags, ","),
					e.Revision, e.UpdatedAt.Local().Format("2006-01-02 15:04"))
				if e.WrittenBy != "" {
					fprintf(w, " by %s", e.WrittenBy)
				}
				fprintf(w, "\n\n%s\n", e.Body)
				for _, r := range h {
					fprintf(w, "\n-- %s %s %s\n%s\n", r.Revision, r.WrittenAt.Local().Format("2006-01-02 15:04"), r.WrittenBy, clip(r.Body, 200))
				}
				return nil
			})
		},
	}
	show.Flags().BoolVar(&history, "history", false, "also show the kept revisions")
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")

	var (
		tags       []string
		searchN    int
		searchJSON bool
	)
	search := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search a project's memory (FTS5 syntax, best first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(cmd.Context(), g, projectID, func(svc *memory.Service, sc memory.Scope) error {
				hits, more, err := svc.Search(cmd.Context(), memory.SearchParams{Scope: sc, Query: args[0], Tags: tags, Limit: searchN})
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if searchJSON {
					return writeJSON(w, map[string]any{"hits": hits, "has_more": more})
				}
				if len(hits) == 0 {
					fprintf(w, "No matches.\n")
					return nil
				}
				tw := table(w)
				fmt.Fprintln(tw, "KEY\tSCORE\tTAGS\tSNIPPET")
				for _, h := range hits {
					fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\n", h.MemoryKey, h.Score, strings.Join(h.Tags, ","), oneLine(h.Snippet))
				}
				return tw.Flush()
			})
		},
	}
	search.Flags().StringSliceVar(&tags, "tag", nil, "only entries holding this tag (repeatable)")
	search.Flags().IntVar(&searchN, "limit", memory.DefaultSearchLimit, fmt.Sprintf("most hits (max %d)", memory.MaxSearchLimit))
	search.Flags().BoolVar(&searchJSON, "json", false, "print JSON")

	var revision string
	del := &cobra.Command{
		Use:   "delete KEY --revision REV",
		Short: "Delete a memory entry at its current revision",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(cmd.Context(), g, projectID, func(svc *memory.Service, sc memory.Scope) error {
				e, err := svc.Delete(cmd.Context(), sc, args[0], revision)
				if err != nil {
					return err
				}
				fprintf(cmd.OutOrStdout(), "Deleted %s (%s at %s).\n", e.MemoryKey, e.MemoryID, e.Revision)
				return nil
			})
		},
	}
	del.Flags().StringVar(&revision, "revision", "", "the entry's current revision (from show)")

	cmd.AddCommand(list, show, search, del)
	return cmd
}

// withMemory opens the stores and runs fn with the memory service and the
// scope of project (an id, or a name of a local project).
func withMemory(ctx context.Context, g *globals, projectID string, fn func(*memory.Service, memory.Scope) error) error {
	if projectID == "" {
		return fmt.Errorf("--project is required")
	}
	if !strings.Contains(projectID, ":") {
		projectID = project.LocalID(projectID)
	}
	st, _, err := g.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	p, err := project.NewRegistry(st.Projects, nil).Get(ctx, projectID)
	if err != nil {
		return err
	}
	return fn(app.NewMemory(st), memory.ScopeFor(p.ID, p.Root))
}

func printMemoryList(w io.Writer, es []memory.Entry, total int, asJSON bool) error {
	if asJSON {
		if es == nil {
			es = []memory.Entry{}
		}
		return writeJSON(w, map[string]any{"entries": es, "total": total})
	}
	if len(es) == 0 {
		fprintf(w, "No memory entries.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "KEY\tREVISION\tTAGS\tUPDATED\tBYTES\tBODY")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", e.MemoryKey, e.Revision, strings.Join(e.Tags, ","),
			e.UpdatedAt.Local().Format("2006-01-02 15:04"), len(e.Body), clip(oneLine(e.Body), 50))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if total > len(es) {
		fprintf(w, "(%d of %d entries)\n", len(es), total)
	}
	return nil
}
