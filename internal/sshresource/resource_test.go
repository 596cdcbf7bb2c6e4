package sshresource_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sshresource"
)

// files makes an identity and a known_hosts file (their contents do not
// matter to Validate) and returns a valid resource using them.
func validResource(t *testing.T) sshresource.Resource {
	t.Helper()
	dir := t.TempDir()
	id := filepath.Join(dir, "id")
	kh := filepath.Join(dir, "known_hosts")
	for _, p := range []string{id, kh} {
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return sshresource.Resource{Name: "build-box_1", Host: "build.example.org", User: "ci", IdentityFile: id, KnownHostsFile: kh}
}

func TestValidateAcceptsBounds(t *testing.T) {
	r := validResource(t)
	for _, mod := range []func(*sshresource.Resource){
		func(r *sshresource.Resource) {},
		func(r *sshresource.Resource) { r.Name = strings.Repeat("a", sshresource.MaxNameBytes) },
		func(r *sshresource.Resource) { r.Host = strings.Repeat("h", sshresource.MaxHostBytes) },
		func(r *sshresource.Resource) { r.Host = "10.0.0.7" },
		func(r *sshresource.Resource) { r.Host = "fe80::1" },
		func(r *sshresource.Resource) { r.Port = 1 },
		func(r *sshresource.Resource) { r.Port = sshresource.MaxPort },
		func(r *sshresource.Resource) { r.User = strings.Repeat("u", sshresource.MaxUserBytes) },
		func(r *sshresource.Resource) { r.DefaultCwd = "/srv/build" },
	} {
		c := r
		mod(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", c, err)
		}
	}
}

func TestValidateRefusesBadInputs(t *testing.T) {
	r := validResource(t)
	dir := t.TempDir()
	spaced := filepath.Join(dir, "my key")
	percent := filepath.Join(dir, "key%h")
	for _, p := range []string{spaced, percent} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		mod    func(*sshresource.Resource)
		secret string // a value the message must not show
	}{
		{"empty name", func(r *sshresource.Resource) { r.Name = "" }, ""},
		{"upper-case name", func(r *sshresource.Resource) { r.Name = "Box" }, ""},
		{"name with space", func(r *sshresource.Resource) { r.Name = "a b" }, ""},
		{"name with slash", func(r *sshresource.Resource) { r.Name = "a/b" }, ""},
		{"name too long", func(r *sshresource.Resource) { r.Name = strings.Repeat("a", sshresource.MaxNameBytes+1) }, ""},
		{"empty host", func(r *sshresource.Resource) { r.Host = "" }, ""},
		{"host option", func(r *sshresource.Resource) { r.Host = "-oProxyCommand=sh" }, "ProxyCommand"},
		{"host with space", func(r *sshresource.Resource) { r.Host = "a.example b" }, "a.example"},
		{"host with user", func(r *sshresource.Resource) { r.Host = "root@secret.example" }, "secret.example"},
		{"host as URI", func(r *sshresource.Resource) { r.Host = "ssh://secret.example" }, "secret.example"},
		{"host too long", func(r *sshresource.Resource) { r.Host = strings.Repeat("h", sshresource.MaxHostBytes+1) }, ""},
		{"negative port", func(r *sshresource.Resource) { r.Port = -1 }, ""},
		{"port too high", func(r *sshresource.Resource) { r.Port = sshresource.MaxPort + 1 }, ""},
		{"empty user", func(r *sshresource.Resource) { r.User = "" }, ""},
		{"user option", func(r *sshresource.Resource) { r.User = "-oops" }, "oops"},
		{"user with at", func(r *sshresource.Resource) { r.User = "sec@ret" }, "sec@ret"},
		{"user with space", func(r *sshresource.Resource) { r.User = "sec ret" }, "sec ret"},
		{"user too long", func(r *sshresource.Resource) { r.User = strings.Repeat("u", sshresource.MaxUserBytes+1) }, ""},
		{"no identity", func(r *sshresource.Resource) { r.IdentityFile = "" }, ""},
		{"relative identity", func(r *sshresource.Resource) { r.IdentityFile = "keys/id" }, "keys/id"},
		{"missing identity", func(r *sshresource.Resource) { r.IdentityFile = filepath.Join(dir, "nope") }, dir},
		{"identity is a directory", func(r *sshresource.Resource) { r.IdentityFile = dir }, dir},
		{"identity with space", func(r *sshresource.Resource) { r.IdentityFile = spaced }, dir},
		{"identity with percent", func(r *sshresource.Resource) { r.IdentityFile = percent }, dir},
		{"identity too long", func(r *sshresource.Resource) { r.IdentityFile = "/" + strings.Repeat("k", sshresource.MaxPathBytes) }, ""},
		{"no known_hosts", func(r *sshresource.Resource) { r.KnownHostsFile = "" }, ""},
		{"relative known_hosts", func(r *sshresource.Resource) { r.KnownHostsFile = "known_hosts" }, ""},
		{"missing known_hosts", func(r *sshresource.Resource) { r.KnownHostsFile = filepath.Join(dir, "kh") }, dir},
		{"relative default_cwd", func(r *sshresource.Resource) { r.DefaultCwd = "srv" }, ""},
		{"default_cwd option", func(r *sshresource.Resource) { r.DefaultCwd = "-P" }, ""},
		{"default_cwd with NUL", func(r *sshresource.Resource) { r.DefaultCwd = "/srv\x00x" }, ""},
		{"default_cwd too long", func(r *sshresource.Resource) { r.DefaultCwd = "/" + strings.Repeat("d", sshresource.MaxPathBytes) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := r
			c.mod(&bad)
			err := bad.Validate()
			if got := failure.KindOf(err); got != failure.InvalidArguments {
				t.Fatalf("Validate() = %v (kind %q), want %q", err, got, failure.InvalidArguments)
			}
			if c.secret != "" && strings.Contains(err.Error(), c.secret) {
				t.Errorf("error %q shows the value %q", err, c.secret)
			}
			if _, err := bad.Argv("true"); failure.KindOf(err) != failure.InvalidArguments {
				t.Errorf("Argv() = %v, want %q", err, failure.InvalidArguments)
			}
		})
	}
}

func TestEffectivePort(t *testing.T) {
	r := sshresource.Resource{}
	if got := r.EffectivePort(); got != sshresource.DefaultPort || sshresource.DefaultPort != 22 {
		t.Errorf("EffectivePort() = %d, want %d", got, 22)
	}
	r.Port = 2222
	if got := r.EffectivePort(); got != 2222 {
		t.Errorf("EffectivePort() = %d, want 2222", got)
	}
}

func TestRemoteCwdPrecedence(t *testing.T) {
	for _, c := range []struct{ call, session, resource, want string }{
		{"/call", "/session", "/resource", "/call"},
		{"", "/session", "/resource", "/session"},
		{"", "", "/resource", "/resource"},
		{"", "", "", ""},
		{"/call", "", "/resource", "/call"},
	} {
		if got := sshresource.RemoteCwd(c.call, c.session, c.resource); got != c.want {
			t.Errorf("RemoteCwd(%q, %q, %q) = %q, want %q", c.call, c.session, c.resource, got, c.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":          "''",
		"/srv":      "'/srv'",
		"it's":      `'it'\''s'`,
		"$(rm -rf)": "'$(rm -rf)'",
		"a\nb":      "'a\nb'",
	} {
		if got := sshresource.Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRemoteCommand(t *testing.T) {
	got, err := sshresource.RemoteCommand("", "make test")
	if err != nil || got != "make test" {
		t.Errorf(`RemoteCommand("", "make test") = %q, %v`, got, err)
	}
	got, err = sshresource.RemoteCommand("/srv/it's", "echo 'a'\necho b")
	want := `cd '/srv/it'\''s' && eval 'echo '\''a'\''` + "\n" + `echo b'`
	if err != nil || got != want {
		t.Errorf("RemoteCommand = %q, %v; want %q", got, err, want)
	}
	if _, err := sshresource.RemoteCommand("", strings.Repeat("x", sshresource.MaxCommandBytes)); err != nil {
		t.Errorf("a command of MaxCommandBytes: %v", err)
	}
	for _, c := range []struct{ cwd, cmd string }{
		{"", ""},
		{"", strings.Repeat("x", sshresource.MaxCommandBytes+1)},
		{"", "a\x00b"},
		{"-P", "true"},
		{"/a\x00b", "true"},
		{"/" + strings.Repeat("d", sshresource.MaxPathBytes), "true"},
	} {
		if _, err := sshresource.RemoteCommand(c.cwd, c.cmd); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("RemoteCommand(%.20q, %.20q) = %v, want %q", c.cwd, c.cmd, err, failure.InvalidArguments)
		}
	}
}

func TestArgvOptions(t *testing.T) {
	r := validResource(t)
	r.Port = 2222
	argv, err := r.Argv("echo hi")
	if err != nil {
		t.Fatal(err)
	}
	if argv[0] != sshresource.Program {
		t.Errorf("argv[0] = %q", argv[0])
	}
	n := len(argv)
	if !slices.Equal(argv[n-3:], []string{"--", r.Host, "echo hi"}) {
		t.Errorf("argv ends %q, want --, host, command", argv[n-3:])
	}
	if slices.Index(argv, "--") != n-3 {
		t.Errorf("-- is not right before the host: %q", argv)
	}
	pairs := [][2]string{
		{"-F", os.DevNull},
		{"-o", "BatchMode=yes"},
		{"-o", "StrictHostKeyChecking=yes"},
		{"-o", "UserKnownHostsFile=" + r.KnownHostsFile},
		{"-o", "GlobalKnownHostsFile=" + os.DevNull},
		{"-o", "UpdateHostKeys=no"},
		{"-o", "IdentitiesOnly=yes"},
		{"-i", r.IdentityFile},
		{"-o", "ForwardAgent=no"},
		{"-o", "ForwardX11=no"},
		{"-o", "ClearAllForwardings=yes"},
		{"-o", "ConnectTimeout=10"},
		{"-o", "ServerAliveInterval=15"},
		{"-o", "ServerAliveCountMax=3"},
		{"-p", "2222"},
		{"-l", "ci"},
	}
	for _, p := range pairs {
		if !hasPair(argv, p) {
			t.Errorf("argv lacks %s %s: %q", p[0], p[1], argv)
		}
	}
	for _, flag := range []string{"-a", "-x", "-T"} {
		if !slices.Contains(argv[:n-3], flag) {
			t.Errorf("argv lacks %s", flag)
		}
	}
	if _, err := r.Argv(""); failure.KindOf(err) != failure.InvalidArguments {
		t.Errorf("Argv(\"\") = %v", err)
	}
}

func hasPair(argv []string, p [2]string) bool {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == p[0] && argv[i+1] == p[1] {
			return true
		}
	}
	return false
}

func TestClientEnvDropsAgentAndPrompts(t *testing.T) {
	env := []string{"PATH=/bin", "SSH_AUTH_SOCK=/a", "SSH_AGENT_PID=1", "SSH_ASKPASS=/p", "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0", "HOME=/h"}
	if got := sshresource.ClientEnv(env); !slices.Equal(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("ClientEnv = %q", got)
	}
}

func TestClassify(t *testing.T) {
	for stderr, want := range map[string]failure.Kind{
		"Host key verification failed.\r\n":                              failure.PermissionDenied,
		"No ED25519 host key is known for [h]:22 and you have requested": failure.PermissionDenied,
		"root@h: Permission denied (publickey).\r\n":                     failure.PermissionDenied,
		"ssh: connect to host h port 22: Connection refused\r\n":         failure.Unavailable,
		"": failure.Unavailable,
	} {
		err := sshresource.Classify("box", []byte(stderr))
		if failure.KindOf(err) != want {
			t.Errorf("Classify(%q) = %v, want %q", stderr, err, want)
		}
		if strings.Contains(err.Error(), " h ") || strings.Contains(err.Error(), "root") {
			t.Errorf("Classify(%q) shows ssh's words: %v", stderr, err)
		}
	}
}

func TestPoolRefusesBadKeysBeforeStarting(t *testing.T) {
	r := validResource(t)
	p, err := sshresource.NewPool("")
	if err != nil {
		t.Fatal(err)
	}
	defer p.CloseAll()
	ctx := context.Background()
	for _, k := range []sshresource.Key{
		{Session: "", Resource: r.Name},
		{Session: strings.Repeat("s", sshresource.MaxSessionBytes+1), Resource: r.Name},
		{Session: "s\x00", Resource: r.Name},
		{Session: "s", Resource: "Bad"},
		{Session: "s", Resource: "other"},
	} {
		if _, err := p.Master(ctx, k, r); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("Master(%.20q/%q) = %v, want %q", k.Session, k.Resource, err, failure.InvalidArguments)
		}
	}
	if p.Len() != 0 {
		t.Errorf("Len() = %d after refusals", p.Len())
	}
}

func TestClosedPoolRefuses(t *testing.T) {
	r := validResource(t)
	p, err := sshresource.NewPool("")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CloseAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Master(context.Background(), sshresource.Key{Session: "s", Resource: r.Name}, r); failure.KindOf(err) != failure.Unavailable {
		t.Errorf("Master on a closed pool = %v, want %q", err, failure.Unavailable)
	}
}
