package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Mode is a sandbox mode.
type Mode string

// Sandbox modes. Unavailable is never requested: it is the mode in force
// when a sandbox was asked for and the kernel cannot enforce one.
const (
	// WorkspaceWrite lets a child read the system and the project and
	// write only the project, its own temporary directory and the
	// policy's extra paths.
	WorkspaceWrite Mode = "workspace-write"
	// ReadOnly lets a child read the system and the project and write
	// nothing but the device files every program expects (/dev/null and
	// friends) and the paths its Sandbox names in Write.
	ReadOnly Mode = "read-only"
	// Off is the explicit opt-out: the child is not confined.
	Off Mode = "off"
	// Unavailable is reported when confinement was requested but the
	// kernel has no Landlock (an old kernel, another OS). The child runs
	// unconfined and says so.
	Unavailable Mode = "unavailable"
)

// ParseMode validates a configured mode ("" is returned as "").
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "", WorkspaceWrite, ReadOnly, Off:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q is not workspace-write, read-only or off", s)
}

// Network is a sandbox network setting.
type Network string

// Network settings. NetworkUnavailable is the setting in force when Off
// was asked for and the kernel cannot enforce it (Landlock ABI < 4).
const (
	NetworkOn          Network = "on"
	NetworkOff         Network = "off"
	NetworkUnavailable Network = "unavailable"
)

// ParseNetwork validates a configured network setting ("" is "").
func ParseNetwork(s string) (Network, error) {
	switch n := Network(s); n {
	case "", NetworkOn, NetworkOff:
		return n, nil
	}
	return "", fmt.Errorf("sandbox network %q is not on or off", s)
}

// A Sandbox is what one execution asks of its confinement. The server's
// [Policy] adds what every child is denied (the data directory) and
// decides the mode in force.
type Sandbox struct {
	// Mode is the project's mode; "" takes the policy's default.
	Mode Mode
	// Project is the project root: readable under every mode, writable
	// under WorkspaceWrite.
	Project string
	// Write lists paths writable under every mode but Off (a private git
	// index directory, a run's private directory). They are
	// the server's own choice, so one may lie inside a denied path (a
	// job's directory in the data directory); a denied path inside one
	// stays denied.
	Write []string
	// ProjectWrite lists paths writable exactly when the project is
	// (under WorkspaceWrite), granted like the project: never inside a
	// denied path, and exactly (see Exact). A managed worktree's git
	// administrative directory and the repository data a commit writes
	// are such paths.
	ProjectWrite []string
	// Exact grants a Write path only while no symbolic link lies on it,
	// checked at every confinement: a path whose parent a child swapped
	// for a link to elsewhere is not granted (the command then fails to
	// write it) rather than granting the link's target. Landlock binds a
	// grant to the directory it resolved, so a swap after that is not
	// followed either.
	Exact bool
}

// A Policy is the server-wide sandbox configuration. A nil Policy
// confines nothing and reports Off.
type Policy struct {
	// Mode is the default mode. Off disables confinement for every child,
	// whatever a project asks (the server announces it at start).
	Mode Mode
	// Deny lists paths no confined child may read or write: the data
	// directory (databases, keys, tokens, config.toml).
	Deny []string
	// Allow lists paths inside a denied path that are not denied (the
	// managed worktrees in the data directory): Deny is carved around
	// them, so a child reaches them as it would any other path, and
	// nothing else of the denied path.
	Allow []string
	// ExtraWrite lists paths writable under WorkspaceWrite besides the
	// project and the run's temporary directory.
	ExtraWrite []string
	// Network Off refuses TCP bind and connect (Landlock ABI >= 4).
	Network Network

	mu sync.Mutex
	// cache holds the compiled rulesets by their inputs; each is checked
	// against the filesystem before reuse (see compiled.fresh).
	cache map[string]*compiled
	// tmps holds the temporary directory of each project under
	// WorkspaceWrite, shared by its runs until Close.
	tmps map[string]string
}

// Status describes the sandbox a policy gives children on this host.
type Status struct {
	Mode    Mode    `json:"mode"`
	ABI     int     `json:"abi"`
	Network Network `json:"network"`
}

// Status reports the policy's default mode in force, the kernel's
// Landlock ABI (0: none) and the network setting in force.
func (p *Policy) Status() Status {
	abi := LandlockABI()
	if p == nil || p.Mode == Off {
		return Status{Mode: Off, ABI: abi, Network: NetworkOn}
	}
	return Status{Mode: inForce(p.Mode, abi), ABI: abi, Network: netInForce(p.Network, abi)}
}

// String describes the status in one line, for the server's banner:
// "workspace-write (Landlock ABI 7)", "off (explicitly disabled)" or
// "unavailable (...)", with the network setting when it is not on.
func (s Status) String() string {
	var out string
	switch s.Mode {
	case Off:
		out = "off (explicitly disabled)"
	case Unavailable:
		out = "unavailable (no Landlock on this kernel or system: processes run unconfined)"
	default:
		out = fmt.Sprintf("%s (Landlock ABI %d)", s.Mode, s.ABI)
	}
	switch s.Network {
	case NetworkOff:
		out += ", network off"
	case NetworkUnavailable:
		out += ", network off unavailable (Landlock ABI < 4: TCP stays open)"
	}
	return out
}

func inForce(m Mode, abi int) Mode {
	if m != Off && abi < 1 {
		return Unavailable
	}
	return m
}

func netInForce(n Network, abi int) Network {
	if n != NetworkOff {
		return NetworkOn
	}
	if abi < 4 {
		return NetworkUnavailable
	}
	return NetworkOff
}

// resolve decides the mode asked for (before the kernel has its say): Off
// when the policy or the request opts out, else the request's mode, else
// the policy's, else WorkspaceWrite.
func (p *Policy) resolve(req Sandbox) Mode {
	switch {
	case p == nil || p.Mode == Off || req.Mode == Off:
		return Off
	case req.Mode != "":
		return req.Mode
	case p.Mode != "":
		return p.Mode
	}
	return WorkspaceWrite
}

// InForce is the mode a child started with req runs under: what Confine
// decides, without preparing anything.
func (p *Policy) InForce(req Sandbox) Mode { return inForce(p.resolve(req), LandlockABI()) }

// InForce is the mode a child of h started with req runs under; "" when
// h is not a Local (it cannot say).
func InForce(h Host, req Sandbox) Mode {
	switch h := h.(type) {
	case *Local:
		return h.Policy.InForce(req)
	case interface{ InForce(Sandbox) Mode }:
		return h.InForce(req)
	}
	return ""
}

// A Confinement is one execution's sandbox, ready to start a command.
type Confinement struct {
	mode    Mode
	network Network
	tmp     string
	set     *compiled
}

// Confine resolves req against the policy: the mode in force and the
// compiled rules; under WorkspaceWrite the project's temporary directory
// (under the OS temporary directory, never inside a denied path) becomes
// the child's TMPDIR. An error means nothing was started.
func (p *Policy) Confine(req Sandbox) (*Confinement, error) {
	mode := p.resolve(req)
	abi := LandlockABI()
	c := &Confinement{mode: inForce(mode, abi), network: NetworkOn}
	if c.mode == Off || c.mode == Unavailable {
		return c, nil
	}
	c.network = netInForce(p.Network, abi)
	deny, err := canonicalAll(p.Deny)
	if err != nil {
		return nil, err
	}
	if len(p.Allow) > 0 {
		allow, err := canonicalAll(p.Allow)
		if err != nil {
			return nil, err
		}
		// The denied paths minus the allowed ones: each denied directory
		// holding an allowed path becomes its other entries, read now
		// (an entry added later is under no grant, so still unreachable).
		var ignored []watched
		deny = carve(deny, allow, &ignored)
	}
	explicit, projectWrite := req.Write, unlinked(req.ProjectWrite)
	if req.Exact {
		explicit = unlinked(explicit)
	}
	var write []string
	read := []string{"/"}
	if req.Project != "" {
		read = append(read, req.Project)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if mode == WorkspaceWrite {
		if req.Project != "" {
			write = append(write, req.Project)
		}
		write = append(write, projectWrite...)
		write = append(write, p.ExtraWrite...)
		if c.tmp, err = p.tmpFor(req.Project); err != nil {
			return nil, err
		}
		write = append(write, c.tmp)
	}
	in := inputs{read: read, write: write, explicit: explicit, deny: deny, network: c.network == NetworkOff}
	key := in.key()
	set := p.cache[key]
	if set == nil || !set.fresh() {
		if set != nil {
			set.release()
		}
		if len(p.cache) >= maxCompiled {
			for k, s := range p.cache {
				s.release()
				delete(p.cache, k)
			}
		}
		if set, err = compile(in); err != nil {
			delete(p.cache, key)
			return nil, err
		}
		if p.cache == nil {
			p.cache = map[string]*compiled{}
		}
		p.cache[key] = set
	}
	set.users++
	c.set = set
	return c, nil
}

// tmpFor returns the project's temporary directory, creating it when it
// is missing (or was removed by a child); the caller holds p.mu.
func (p *Policy) tmpFor(project string) (string, error) {
	if d, ok := p.tmps[project]; ok {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	d, err := os.MkdirTemp("", tmpPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("cannot create the run's temporary directory: %w", err)
	}
	if p.tmps == nil {
		p.tmps = map[string]string{}
	}
	p.tmps[project] = d
	return d, nil
}

// tmpPrefix starts the name of every project temporary directory, which
// is followed by the creating server's pid and a dash.
const tmpPrefix = "webcodex-run-"

// SweepTemp removes the project temporary directories left in dir (""
// for os.TempDir()) by servers that are gone (killed before their Close
// ran), and returns how many it removed. A directory whose creator's pid
// is alive is kept, even if the pid was reused: the sweep never takes a
// live server's directory.
func SweepTemp(dir string) int {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tmpPrefix)
		pidText, _, dash := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || !dash || err != nil || pid <= 0 || !e.IsDir() || pid == os.Getpid() {
			continue
		}
		if !processGone(pid) {
			continue // alive, or not ours to judge
		}
		if os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// Close removes the projects' temporary directories and releases the
// compiled rules. Children still running keep their confinement.
func (p *Policy) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.tmps {
		os.RemoveAll(d)
	}
	p.tmps = nil
	for _, set := range p.cache {
		set.release()
	}
	p.cache = nil
}

// Mode is the mode in force.
func (c *Confinement) Mode() Mode { return c.mode }

// Network is the network setting in force.
func (c *Confinement) Network() Network { return c.network }

// Env returns env with TMPDIR pointing at the temporary directory of the
// run's project, when it has one.
func (c *Confinement) Env(env []string) []string {
	if c.tmp == "" {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+c.tmp)
}

// Start starts cmd confined. The server itself is never confined: see
// docs/decisions/0017-landlock-sandbox-per-child.md.
func (c *Confinement) Start(cmd *exec.Cmd) error {
	if c.set == nil {
		return cmd.Start()
	}
	return startConfined(cmd, c.set)
}

// Close releases the confinement's hold on its compiled rules.
func (c *Confinement) Close(p *Policy) {
	if c == nil || c.set == nil {
		return
	}
	p.mu.Lock()
	c.set.users--
	if c.set.users == 0 && c.set.stale {
		c.set.close()
	}
	p.mu.Unlock()
	c.set = nil
}

// inputs are what a compiled ruleset is built from.
type inputs struct {
	read, write, explicit, deny []string
	network                     bool // refuse TCP (and, from ABI 10, UDP)
}

// maxCompiled bounds the cached rulesets of a policy (each holds a file
// descriptor); beyond it the cache starts over.
const maxCompiled = 64

func (in inputs) key() string {
	return fmt.Sprintf("%q|%q|%q|%q|%t", in.read, in.write, in.explicit, in.deny, in.network)
}

// writes carves the write grants: the mode's grants around every denied
// path, the explicit ones only around the denied paths inside them.
func (in inputs) writes(watch *[]watched) []string {
	out := carve(in.write, in.deny, watch)
	for _, g := range in.explicit {
		var inside []string
		for _, d := range in.deny {
			if within(d, filepath.Clean(g)) {
				inside = append(inside, d)
			}
		}
		out = append(out, carve([]string{g}, inside, watch)...)
	}
	return out
}

// watched is a path whose change invalidates a compiled ruleset: a
// directory carved around a denied path (an entry added or removed) or a
// granted root (replaced by another inode).
type watched struct {
	path  string
	ino   uint64
	mtime int64
}

// canonicalAll returns the absolute, symlink-resolved form of each path
// that exists (a missing path needs no denial: nothing is there to read).
func canonicalAll(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: denied path %q is not absolute", p)
		}
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("sandbox: denied path %q: %w", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// unlinked returns the paths of ps that are absolute and hold no
// symbolic link (their resolved form is themselves).
func unlinked(ps []string) []string {
	if len(ps) == 0 {
		return ps
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if r, err := filepath.EvalSymlinks(p); err == nil && filepath.IsAbs(p) && r == filepath.Clean(p) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether p is d or lies beneath it.
func within(p, d string) bool {
	return p == d || d == "/" || strings.HasPrefix(p, d+"/")
}

// carve returns paths whose union is the union of grants minus every
// denied path. Landlock rules only add access to whole hierarchies, so a
// grant that contains a denied path is replaced by the entries of each
// directory on the way down to it, except the one leading there: those
// directories themselves stay unlistable, though every name in them but
// the denied one stays reachable. A grant at or beneath a denied path is
// dropped: denial wins. A symbolic link among the entries is kept only
// when its target lies clear of every denied path (Landlock follows it).
func carve(grants, deny []string, watch *[]watched) []string {
	var out []string
	for _, g := range grants {
		g = filepath.Clean(g)
		if r, err := filepath.EvalSymlinks(g); err == nil {
			g = r
		}
		out = carveOne(out, g, deny, watch)
	}
	return out
}

func carveOne(out []string, g string, deny []string, watch *[]watched) []string {
	var inside []string
	for _, d := range deny {
		if within(g, d) {
			return out // denial wins
		}
		if within(d, g) {
			inside = append(inside, d)
		}
	}
	*watch = append(*watch, watch1(g))
	if len(inside) == 0 {
		return append(out, g)
	}
	entries, err := os.ReadDir(g)
	if err != nil {
		return out
	}
	for _, e := range entries {
		p := filepath.Join(g, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			t, err := filepath.EvalSymlinks(p)
			if err != nil || overlaps(t, deny) {
				continue
			}
		}
		if overlaps(p, inside) {
			out = carveOne(out, p, inside, watch)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// overlaps reports whether p is, contains or lies beneath a denied path.
func overlaps(p string, deny []string) bool {
	for _, d := range deny {
		if within(p, d) || within(d, p) {
			return true
		}
	}
	return false
}
