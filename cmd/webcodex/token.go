package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
)

func newTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Create, list and revoke API tokens"}
	var (
		name, owner, scopes, tools string
		asJSON                     bool
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API token (printed once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAuth(cmd.Context(), g, func(svc *auth.Service) error {
				sc, err := auth.ParseScopes(scopes)
				if err != nil {
					return err
				}
				var names []string
				if tools != "" {
					names = strings.Split(tools, ",")
				}
				raw, tok, err := svc.CreateTokenWithTools(cmd.Context(), name, owner, sc, names)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"token": raw, "record": tok})
				}
				fprintf(cmd.OutOrStdout(), "Created %s (%s, owner %s, scopes %s).\nToken (shown once):\n  %s\n",
					tok.ID, tok.Name, tok.Owner, joinScopes(tok.Scopes), raw)
				return nil
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "label for the token (required)")
	create.Flags().StringVar(&owner, "owner", auth.DefaultOwner, "authority group; sessions are private to their creating group")
	create.Flags().StringVar(&scopes, "scopes", joinScopes(auth.DefaultScopes), "comma-separated scopes: "+joinScopes(auth.AllScopes))
	create.Flags().StringVar(&tools, "tools", "", "the token's MCP tool profile: core, full or comma-separated tools (default: the server's tool_profile)")
	create.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	create.MarkFlagRequired("name")

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
		Short: "Revoke an API token",
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
	fmt.Fprintln(tw, "ID\tNAME\tOWNER\tSCOPES\tCREATED\tSTATUS")
	for _, t := range toks {
		status := "active"
		if t.Revoked() {
			status = "revoked " + t.RevokedAt.Format("2006-01-02")
		}
		scopes := joinScopes(t.Scopes)
		if t.Runner != "" {
			scopes = "(runner channel only)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Owner, scopes, t.CreatedAt.Format("2006-01-02 15:04"), status)
	}
	return tw.Flush()
}
