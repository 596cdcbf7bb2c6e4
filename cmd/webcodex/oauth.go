package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

func newOAuthCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "oauth", Short: "The built-in OAuth authorization server's clients"}
	clients := &cobra.Command{Use: "clients", Short: "List and revoke the OAuth clients hosted agents enrolled"}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List OAuth clients (enrolled by metadata document or registration), revoked ones included",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOAuthStore(cmd.Context(), g, func(st oauthClients) error {
				cs, err := st.Clients(cmd.Context())
				if err != nil {
					return err
				}
				return printOAuthClients(cmd.OutOrStdout(), cs, listJSON)
			})
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")
	revoke := &cobra.Command{
		Use:   "revoke CLIENT_ID",
		Short: "Revoke an OAuth client and every token issued to it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withOAuthStore(cmd.Context(), g, func(st oauthClients) error {
				c, err := st.RevokeClient(cmd.Context(), args[0], time.Now())
				if err != nil {
					return err
				}
				fprintf(cmd.OutOrStdout(), "Revoked %s (%s) and every token issued to it.\n", c.ID, c.Name)
				return nil
			})
		},
	}
	clients.AddCommand(list, revoke)
	cmd.AddCommand(clients)
	return cmd
}

// withOAuthStore opens the deployment's OAuth store (never creating oauth.db)
// and calls fn with it.
func withOAuthStore(ctx context.Context, g *globals, fn func(oauthClients) error) error {
	cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	st, closeStore, err := app.OpenOAuthStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	return fn(st)
}

// oauthClients is what the oauth commands do with the store.
type oauthClients interface {
	Clients(ctx context.Context) ([]authserver.Client, error)
	RevokeClient(ctx context.Context, id string, at time.Time) (authserver.Client, error)
}

func printOAuthClients(w io.Writer, cs []authserver.Client, asJSON bool) error {
	if asJSON {
		return writeJSON(w, map[string]any{"clients": cs})
	}
	if len(cs) == 0 {
		fprintf(w, "No OAuth clients.\n")
		return nil
	}
	tw := table(w)
	fmt.Fprintln(tw, "CLIENT ID\tNAME\tENROLLED BY\tREDIRECTS TO\tCREATED\tSTATUS")
	for _, c := range cs {
		status := "active"
		if c.Revoked() {
			status = "revoked " + c.RevokedAt.Format("2006-01-02")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Enrolment, redirectHosts(c.RedirectURIs),
			c.CreatedAt.Local().Format("2006-01-02 15:04"), status)
	}
	return tw.Flush()
}

// redirectHosts lists the distinct hosts of redirect URIs.
func redirectHosts(uris []string) string {
	var hosts []string
	for _, u := range uris {
		p, err := url.Parse(u)
		if err != nil {
			continue
		}
		if !slices.Contains(hosts, p.Host) {
			hosts = append(hosts, p.Host)
		}
	}
	return strings.Join(hosts, ",")
}
