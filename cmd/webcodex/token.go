package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

func newTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke API tokens and project credentials"}
	var (
		name, owner, scopes, tools, bound string
		expires                           time.Duration
		asJSON                            bool
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API token, or with --project a project credential (printed once)",
		Long: "Create an API token (a direct runtime credential). With --project, create a project credential " +
			"instead: a temporary token that reaches only that project and expires (--expires, default " +
			auth.DefaultProjectCredentialTTL.String() + ", at most " + auth.MaxProjectCredentialTTL.String() + "); " +
			"it never carries memory:read, memory:manage, account:manage or admin, and cannot sign in to the console.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if bound == "" && name == "" {
				return failure.New(failure.InvalidArguments, "--name is required (it may be left out only with --project)")
			}
			if bound == "" && cmd.Flags().Changed("expires") {
				return failure.New(failure.InvalidArguments, "--expires applies to a project credential (--project); an API token lasts until revoked")
			}
			if bound != "" && tools != "" {
				return failure.New(failure.InvalidArguments, "--tools applies to an API token, not a project credential")
			}
			return withCredentialStores(ctx, g, func(svc *auth.Service, r *project.Registry) error {
				var sc []auth.Scope
				if bound == "" || cmd.Flags().Changed("scopes") {
					var err error
					if sc, err = auth.ParseScopes(scopes); err != nil {
						return err
					}
				}
				var (
					raw string
					tok auth.Token
					err error
				)
				if bound != "" {
					raw, tok, err = createProjectCredential(ctx, svc, r, name, owner, cmd.Flags().Changed("owner"), bound, sc, expires)
				} else {
					var names []string
					if tools != "" {
						names = strings.Split(tools, ",")
					}
					raw, tok, err = svc.CreateTokenWithTools(ctx, name, owner, sc, names)
				}
				if err != nil {
					return err
				}
				return printCreated(cmd, raw, tok, asJSON)
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "label for the token (required without --project)")
	create.Flags().StringVar(&owner, "owner", auth.DefaultOwner, "authority group; sessions are private to their creating group")
	create.Flags().StringVar(&scopes, "scopes", joinScopes(auth.DefaultScopes), "comma-separated scopes: "+joinScopes(auth.AllScopes)+
		" (with --project: among "+joinScopes(auth.ProjectScopes)+", default all of those)")
	create.Flags().StringVar(&tools, "tools", "", "the token's MCP tool profile: core, full or comma-separated tools (default: the server's tool_profile)")
	create.Flags().StringVar(&bound, "project", "", "make a project credential reaching only this project (id, or a local project's name)")
	create.Flags().DurationVar(&expires, "expires", 0, "with --project: how long the credential lasts, e.g. 8h (default "+auth.DefaultProjectCredentialTTL.String()+")")
	create.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List API tokens (never their values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAuth(cmd.Context(), g, func(svc *auth.Service) error {
				toks, err := svc.ListTokens(cmd.Context())
				if err != nil {
					return err
				}
				return printTokens(cmd.OutOrStdout(), toks, listJSON)
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")

	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token (an API token, a project credential or a project share)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAuth(cmd.Context(), g, func(svc *auth.Service) error {
				tok, err := svc.RevokeToken(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fprintf(cmd.OutOrStdout(), "Revoked %s (%s).\n", tok.ID, tok.Name)
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func withAuth(ctx context.Context, g *globals, fn func(*auth.Service) error) error {
	st, _, err := g.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	svc, err := auth.NewService(st.Auth, auth.Options{CheckTools: app.CheckToolProfile})
	if err != nil {
		return err
	}
	return fn(svc)
}

func joinScopes(s []auth.Scope) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return strings.Join(out, ",")
}

func printTokens(w io.Writer, toks []auth.Token, asJSON bool) error {
	if asJSON {
		if toks == nil {
			toks = []auth.Token{}
		}
		return writeJSON(w, map[string]any{"tokens": toks})
	}
	if len(toks) == 0 {
		fprintf(w, "No tokens.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "ID\tKIND\tNAME\tOWNER\tPROJECT\tSCOPES\tCREATED\tEXPIRES\tSTATUS")
	now := time.Now()
	for _, t := range toks {
		status := "active"
		switch {
		case t.Revoked():
			status = "revoked " + t.RevokedAt.Format("2006-01-02")
		case t.Expired(now):
			status = "expired"
		}
		kind, scopes := string(t.Kind), joinScopes(t.Scopes)
		if t.Runner != "" {
			kind, scopes = "runner", "(runner channel only)"
		}
		proj, exp := "-", "-"
		if t.Project != "" {
			proj = t.Project
		}
		if t.ExpiresAt != nil {
			exp = t.ExpiresAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, kind, t.Name, t.Owner, proj, scopes, t.CreatedAt.Format("2006-01-02 15:04"), exp, status)
	}
	return tw.Flush()
}
