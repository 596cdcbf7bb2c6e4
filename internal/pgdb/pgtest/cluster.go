package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A Cluster is a PostgreSQL cluster of one test's own, started with
// fsync, synchronous_commit and full_page_writes on (scripts/pgcluster.sh
// start --durable), for tests that crash the database server itself.
type Cluster struct {
	t      testing.TB
	script string
	dir    string
	// URL names the cluster's postgres database.
	URL string
}

// DurableCluster starts a Cluster for t, stopped and removed when t ends.
// Like URL, it skips without EnvURL (a sign that PostgreSQL is not
// installed) unless EnvRequire is set.
func DurableCluster(t testing.TB) *Cluster {
	t.Helper()
	URL(t) // skips or fails as every PostgreSQL test does
	script, err := findScript()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, "start", "--durable").CombinedOutput()
	if err != nil {
		t.Fatalf("start a durable cluster: %v\n%s", err, out)
	}
	c := &Cluster{t: t, script: script}
	for _, m := range regexp.MustCompile(`export (\w+)='?([^'\n]*)'?`).FindAllStringSubmatch(string(out), -1) {
		switch m[1] {
		case "PGCLUSTER_DIR":
			c.dir = m[2]
		case EnvURL:
			c.URL = m[2]
		}
	}
	if c.dir == "" || c.URL == "" {
		t.Fatalf("pgcluster.sh printed no cluster:\n%s", out)
	}
	t.Cleanup(func() { c.run("stop", c.dir) })
	return c
}

// Crash stops the server at once (no shutdown checkpoint): what commits
// forced to disk is all that survives, as after a crash.
func (c *Cluster) Crash() { c.t.Helper(); c.run("crash", c.dir) }

// Restart starts the crashed server again; it replays its WAL first.
func (c *Cluster) Restart() { c.t.Helper(); c.run("restart", c.dir) }

func (c *Cluster) run(args ...string) {
	c.t.Helper()
	if out, err := exec.Command("bash", append([]string{c.script}, args...)...).CombinedOutput(); err != nil {
		c.t.Fatalf("pgcluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// findScript finds scripts/pgcluster.sh above the test's directory.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "pgcluster.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
