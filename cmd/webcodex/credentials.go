package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

// Project-bound credentials on the command line: `token create --project`
// makes a project credential, `project share` a project share. Both name
// a registered project by id or, for a local project, by name.

// withCredentialStores is withAuth with the project registry: fn gets the
// token service and the registry over one opening of the data directory.
func withCredentialStores(ctx context.Context, g *globals, fn func(*auth.Service, *project.Registry) error) error {
	st, _, err := g.openStores(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	svc, err := auth.NewService(st.Auth, auth.Options{CheckTools: app.CheckToolProfile})
	if err != nil {
		return err
	}
	return fn(svc, project.NewRegistry(st.Projects, nil))
}

// lookupProject returns the registered project idOrName names: an id
// (agent:...), or the name of a local project.
func lookupProject(ctx context.Context, r *project.Registry, idOrName string) (project.Project, error) {
	id := idOrName
	if !strings.Contains(id, ":") {
		id = project.LocalID(id)
	}
	return r.Get(ctx, id)
}

// createProjectCredential makes the project credential of `token create
// --project`: it belongs to the project's authority group (the group of
// the runner that serves it, or owner for a local project), so an --owner
// naming another group is refused: that is what a project share is for.
func createProjectCredential(ctx context.Context, svc *auth.Service, r *project.Registry, name, owner string, ownerSet bool,
	projectName string, scopes []auth.Scope, ttl time.Duration) (string, auth.Token, error) {
	p, err := lookupProject(ctx, r, projectName)
	if err != nil {
		return "", auth.Token{}, err
	}
	if p.Owner != "" {
		if ownerSet && owner != p.Owner {
			return "", auth.Token{}, failure.New(failure.InvalidArguments,
				"project %s belongs to authority group %q, not %q: give another group access with webcodex project share", p.ID, p.Owner, owner)
		}
		owner = p.Owner
	}
	return svc.CreateProjectCredential(ctx, name, owner, p.ID, scopes, ttl)
}

func newProjectShareCmd(g *globals) *cobra.Command {
	var (
		with, name, scopes string
		expires            time.Duration
		asJSON             bool
	)
	share := &cobra.Command{
		Use:   "share ID|NAME --with OWNER",
		Short: "Give another authority group scoped access to one project (a project share; printed once)",
		Long: "Create a project share: a token of the authority group OWNER that reaches only this project, " +
			"even when a runner of another group serves it. It never carries memory:read, memory:manage, " +
			"account:manage or admin. It lasts until revoked (webcodex token revoke ID) or until --expires.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return withCredentialStores(ctx, g, func(svc *auth.Service, r *project.Registry) error {
				var sc []auth.Scope
				if cmd.Flags().Changed("scopes") {
					var err error
					if sc, err = auth.ParseScopes(scopes); err != nil {
						return err
					}
				}
				var until *time.Time
				if cmd.Flags().Changed("expires") {
					at := time.Now().Add(expires)
					until = &at
				}
				p, err := lookupProject(ctx, r, args[0])
				if err != nil {
					return err
				}
				raw, tok, err := svc.CreateProjectShare(ctx, name, with, p.ID, sc, until)
				if err != nil {
					return err
				}
				return printCreated(cmd, raw, tok, asJSON)
			})
		},
	}
	share.Flags().StringVar(&with, "with", "", "the authority group (owner) the project is shared with (required)")
	share.Flags().StringVar(&name, "name", "", "label for the share (default: the kind and the project)")
	share.Flags().StringVar(&scopes, "scopes", joinScopes(auth.ProjectScopes), "comma-separated scopes, among "+joinScopes(auth.ProjectScopes))
	share.Flags().DurationVar(&expires, "expires", 0, "how long the share lasts, e.g. 72h (default: until revoked)")
	share.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	share.MarkFlagRequired("with")
	return share
}

// printCreated prints a new token's record and its raw value (shown once).
func printCreated(cmd *cobra.Command, raw string, tok auth.Token, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"token": raw, "record": tok})
	}
	bound := ""
	if tok.Project != "" {
		bound = ", project " + tok.Project
	}
	if tok.ExpiresAt != nil {
		bound += ", expires " + tok.ExpiresAt.Format(time.RFC3339)
	}
	fprintf(cmd.OutOrStdout(), "Created %s %s (%s, owner %s, scopes %s%s).\nToken (shown once):\n  %s\n",
		tok.Kind, tok.ID, tok.Name, tok.Owner, joinScopes(tok.Scopes), bound, raw)
	return nil
}
