package runner

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Bounds of caller-supplied environment additions.
const (
	MaxEnvVars     = 64
	MaxEnvValueLen = 8 << 10
)

// inherited lists the server environment variables a child may see (with
// the operating system's own, platformInherited). Nothing else of the
// server's environment reaches a child: not its credentials
// (WEBCODEX_TOKEN), not cloud keys, not anything a test harness set.
var inherited = append([]string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
	"GOPATH", "GOCACHE", "GOMODCACHE", "GOROOT", "GOPROXY", "GOFLAGS", "GOTOOLCHAIN",
	"CARGO_HOME", "RUSTUP_HOME", "PYENV_ROOT", "NODE_PATH", "JAVA_HOME",
}, platformInherited...)

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// InheritedNames returns the names of the server environment variables a
// child may see (values that look like credentials excepted). The server
// keeps no more than these, plus its own configuration, in its environment.
func InheritedNames() []string { return slices.Clone(inherited) }

// secretish reports whether an environment variable name looks like it
// holds a credential.
func secretish(key string) bool {
	return strings.HasPrefix(strings.ToUpper(key), "WEBCODEX_") || CredentialName(key)
}

// CredentialName reports whether an environment variable name says it
// holds a credential (TOKEN, SECRET, PASSWORD, API_KEY, AUTH, …, in any
// case).
func CredentialName(key string) bool {
	k := strings.ToUpper(key)
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "PRIVATE_KEY", "CREDENTIAL", "AUTH"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// ValidateEnv checks caller additions: names are shell identifiers, at
// most MaxEnvVars of them, values bounded and without NUL. WEBCODEX_*
// names are refused so a caller cannot reconfigure tools that read them.
func ValidateEnv(add map[string]string) error {
	if len(add) > MaxEnvVars {
		return fmt.Errorf("at most %d environment variables", MaxEnvVars)
	}
	for k, v := range add {
		if !envKeyRE.MatchString(k) {
			return fmt.Errorf("environment name %q is not an identifier", k)
		}
		if strings.HasPrefix(strings.ToUpper(k), "WEBCODEX_") {
			return fmt.Errorf("environment name %q is reserved", k)
		}
		if len(v) > MaxEnvValueLen || strings.ContainsRune(v, 0) {
			return fmt.Errorf("environment value of %s is longer than %d bytes or holds NUL", k, MaxEnvValueLen)
		}
	}
	return nil
}

// ChildEnv builds a child's environment from the allowed part of the
// server's environment (getenv) plus the caller's additions.
func ChildEnv(getenv func(string) string, add map[string]string) []string {
	m := map[string]string{"TERM": "dumb", "NO_COLOR": "1", "GIT_TERMINAL_PROMPT": "0", "PAGER": "cat"}
	for _, k := range inherited {
		if v := getenv(k); v != "" && !secretish(k) {
			m[k] = v
		}
	}
	if m["PATH"] == "" {
		m["PATH"] = defaultPath
	}
	for k, v := range add {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
