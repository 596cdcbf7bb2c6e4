package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/project"
)

// TunnelWait bounds how long share waits for cloudflared to print its
// quick tunnel's URL.
const TunnelWait = 30 * time.Second

// Tunnel modes of share.
const (
	tunnelAuto        = "auto"        // cloudflared when it is on PATH and no --public-url is given
	tunnelCloudflared = "cloudflared" // cloudflared, or fail
	tunnelNone        = "none"
)

func newShareCmd(g *globals) *cobra.Command {
	var (
		dir, publicURL, tunnel, listen string
		fresh                          bool
		expires                        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "share",
		Short: "Share one project with a hosted agent: a server, a temporary credential and what to paste",
		Long: "Start the server on loopback for one project, mint a temporary project credential for it,\n" +
			"and print what to paste into ChatGPT, claude.ai, Claude Code and Codex. With a public https\n" +
			"URL (--public-url, or a cloudflared quick tunnel when cloudflared is on PATH) the built-in\n" +
			"OAuth authorization server is on, so hosted connectors can enrol. Ctrl-C stops the server\n" +
			"and revokes the credential. Nothing is downloaded.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.secureServer(); err != nil {
				return err
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return runShare(cmd.Context(), cfg, shareOptions{dir: dir, publicURL: publicURL, tunnel: tunnel, listen: listen,
				fresh: fresh, expires: expires}, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&dir, "project", ".", "the project directory to share")
	cmd.Flags().StringVar(&publicURL, "public-url", "", "the https URL the server is reached by (a tunnel you run); enables OAuth")
	cmd.Flags().StringVar(&tunnel, "tunnel", tunnelAuto, "auto (cloudflared when on PATH), cloudflared, or none")
	cmd.Flags().StringVar(&listen, "listen", "", "listen address (default: the configured one, "+app.DefaultListen+")")
	cmd.Flags().BoolVar(&fresh, "fresh", false, "use a new temporary data directory, removed at exit, instead of yours")
	cmd.Flags().DurationVar(&expires, "expires", auth.DefaultProjectCredentialTTL, "the credential's lifetime, if share is not stopped first")
	return cmd
}

type shareOptions struct {
	dir, publicURL, tunnel, listen string
	fresh                          bool
	expires                        time.Duration
}

// runShare serves one project until ctx ends, with a temporary project
// credential it revokes on the way out.
func runShare(ctx context.Context, cfg app.Config, o shareOptions, stdout, stderr io.Writer) error {
	if o.tunnel != tunnelAuto && o.tunnel != tunnelCloudflared && o.tunnel != tunnelNone {
		return fmt.Errorf("--tunnel %q: use auto, cloudflared or none", o.tunnel)
	}
	cloudflared, _ := exec.LookPath("cloudflared")
	useTunnel := o.publicURL == "" && (o.tunnel == tunnelCloudflared || o.tunnel == tunnelAuto && cloudflared != "")
	if o.tunnel == tunnelCloudflared && cloudflared == "" {
		return errors.New("--tunnel cloudflared: cloudflared is not on PATH (share never downloads it)")
	}
	if o.fresh {
		d, err := os.MkdirTemp("", "webcodex-share-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cfg.DataDir = d
	}
	if o.listen != "" {
		cfg.Listen = o.listen
	}
	if o.publicURL != "" {
		cfg.PublicURL = o.publicURL
	}
	// Hosted connectors enrol through OAuth; Claude Code and Codex on this
	// machine use the bearer credential or OAuth alike.
	cfg.OAuth.Enabled = o.publicURL != "" || useTunnel
	if err := cfg.Validate(); err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, newLogger(stderr, cfg))
	if err != nil {
		return err
	}
	defer a.Close()
	ps, err := a.RegisterProjects(ctx, []string{o.dir})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w (is another server running? --listen picks another address)", cfg.Listen, err)
	}
	local := "http://" + ln.Addr().String()
	if useTunnel {
		stop, u, err := startQuickTunnel(ctx, cloudflared, local, stderr)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
		a.Config.PublicURL = u
	}
	if _, err := a.ListenOn(ln); err != nil {
		return err
	}
	raw, tok, err := a.Auth.CreateProjectCredential(ctx, "share "+ps[0].ID, auth.DefaultOwner, ps[0].ID, nil, o.expires)
	if err != nil {
		return err
	}
	// Revoked on every way out, Ctrl-C included; a kill -9 leaves it to
	// its expiry.
	defer func() {
		if _, err := a.Auth.RevokeToken(context.WithoutCancel(ctx), tok.ID); err != nil {
			fprintf(stderr, "share: could not revoke %s: %v (it expires %s; revoke it with webcodex token revoke %s)\n",
				tok.ID, err, tok.ExpiresAt.Local().Format(time.DateTime), tok.ID)
			return
		}
		fprintf(stdout, "Revoked the share credential %s.\n", tok.ID)
	}()
	writeShareInstructions(stdout, shareInfo{
		Project: ps[0], Local: local, Public: a.Config.PublicURL, Token: raw, Expires: *tok.ExpiresAt,
		OAuth: cfg.OAuth.Enabled, AdminToken: filepath.Join(cfg.DataDir, app.AdminTokenFile), Fresh: o.fresh,
	})
	return a.Serve(ctx)
}

// shareInfo is what share tells the person.
type shareInfo struct {
	Project       project.Project
	Local, Public string
	Token         string
	Expires       time.Time
	OAuth, Fresh  bool
	AdminToken    string
}

// writeShareInstructions prints what to paste into each client; its last
// line says where the server listens.
func writeShareInstructions(w io.Writer, s shareInfo) {
	mcp := s.Local + "/mcp"
	fprintf(w, "Sharing %s (%s).\n\n", s.Project.ID, s.Project.Root)
	if s.Public != "" {
		mcp = strings.TrimSuffix(s.Public, "/") + "/mcp"
		fprintf(w, "  MCP URL       %s   (on this machine also %s/mcp)\n", mcp, s.Local)
	} else {
		fprintf(w, "  MCP URL       %s\n", mcp)
	}
	fprintf(w, "  Bearer token  %s\n", s.Token)
	fprintf(w, "                this project only, no Memory scopes; expires %s, revoked at Ctrl-C\n\n", s.Expires.Local().Format(time.DateTime))
	if strings.HasPrefix(s.Public, "https://") {
		fprintf(w, "ChatGPT   Settings > Apps & Connectors > Advanced > Developer mode, then Create:\n")
		fprintf(w, "          URL %s, Authentication OAuth\n", mcp)
		fprintf(w, "claude.ai Settings > Connectors > Add custom connector: %s\n", mcp)
		fprintf(w, "          Both open WebCodex's consent page: sign in with the token in %s\n", s.AdminToken)
		fprintf(w, "          and approve for %s.\n", s.Project.ID)
	} else {
		fprintf(w, "ChatGPT and claude.ai need a public https URL: install cloudflared (share starts a quick\n")
		fprintf(w, "          tunnel with it) or run a tunnel yourself and pass --public-url https://...\n")
	}
	fprintf(w, "Claude Code\n  claude mcp add --transport http webcodex %s --header \"Authorization: Bearer %s\"\n", mcp, s.Token)
	fprintf(w, "Codex\n  export WEBCODEX_SHARE_TOKEN=%s\n  codex mcp add webcodex --url %s --bearer-token-env-var WEBCODEX_SHARE_TOKEN\n", s.Token, mcp)
	if s.Fresh {
		fprintf(w, "\nData: a temporary directory, removed when share stops.\n")
	}
	fprintf(w, "\nWebCodex %s listening on %s   (Ctrl-C stops sharing)\n", app.Version, s.Local)
}

// quickTunnelURL finds a Cloudflare quick tunnel's URL in cloudflared's
// log.
var quickTunnelURL = regexp.MustCompile(`https://[a-z0-9-]+\.trycloudflare\.com`)

// startQuickTunnel starts `cloudflared tunnel --url local` and returns its
// public URL once cloudflared prints it (within TunnelWait), and a
// function that stops it.
func startQuickTunnel(ctx context.Context, cloudflared, local string, stderr io.Writer) (func(), string, error) {
	cmd := exec.Command(cloudflared, "tunnel", "--no-autoupdate", "--url", local)
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("cloudflared: %w", err)
	}
	exited := make(chan struct{})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u := quickTunnelURL.FindString(sc.Text()); u != "" {
				select {
				case found <- u:
				default:
				}
			}
		}
		cmd.Wait()
		close(exited)
	}()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	wait := time.NewTimer(TunnelWait)
	defer wait.Stop()
	select {
	case u := <-found:
		fprintf(stderr, "share: cloudflared quick tunnel %s -> %s\n", u, local)
		return stop, u, nil
	case <-exited:
		return nil, "", errors.New("cloudflared exited before printing its tunnel URL")
	case <-wait.C:
		stop()
		return nil, "", fmt.Errorf("cloudflared printed no tunnel URL within %s", TunnelWait)
	case <-ctx.Done():
		stop()
		return nil, "", ctx.Err()
	}
}
