// Package skill reads Agent Skills from a project tree: the directories
// under .agents/skills and .claude/skills holding a SKILL.md, a file of
// YAML front matter (name, description) between "---" lines followed by
// Markdown instructions.
//
// Reading is bounded and never fatal: at most MaxSkills skills are read,
// each SKILL.md at most MaxSkillBytes (a larger one is never read whole),
// and a skill that cannot be used is listed with StatusInvalid and a
// stable reason instead of failing the listing. All I/O goes through the
// project's root handle (project.Tree), so a skill directory that is a
// symlink out of the project is never read (it is listed invalid with
// ReasonOutsideProject).
package skill

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Bounds of skill reading.
const (
	// MaxSkillBytes is the largest SKILL.md read; at most MaxSkillBytes+1
	// bytes of a file are ever read, and a larger file is ReasonTooLarge.
	MaxSkillBytes = 64 << 10
	// MaxSkills bounds the skills one listing reads and returns.
	MaxSkills = 100
	// MaxRootEntries bounds the directory entries read from one skills
	// root (.agents/skills, .claude/skills).
	MaxRootEntries = 4096
	// MaxNameChars and MaxDescriptionChars bound the front matter fields,
	// as the Agent Skills format asks.
	MaxNameChars        = 64
	MaxDescriptionChars = 1024
	// MaxCatalogBytes bounds the metadata of one Catalog (names,
	// descriptions and revisions together); skills past it are left out
	// and the catalog is marked truncated.
	MaxCatalogBytes = 32 << 10
)

// Sources of skills, and the project directory each is read from.
const (
	SourceAgents = "agents"
	SourceClaude = "claude"
	// SourceRunner is a skill from one of the runner's own skills roots
	// (runner.toml [skills] roots), outside the project: its Path is
	// "skills.roots[i]/<dir>/SKILL.md".
	SourceRunner = "runner"
)

// Roots are the skills roots in listing order, with their source.
var Roots = []struct{ Dir, Source string }{
	{".agents/skills", SourceAgents},
	{".claude/skills", SourceClaude},
}

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Status of a listed skill.
const (
	StatusValid   = "valid"
	StatusInvalid = "invalid"
)

// Reasons a skill is invalid (stable strings).
const (
	// ReasonNoFrontMatter: the file does not start with a "---" line.
	ReasonNoFrontMatter = "no_front_matter"
	// ReasonBadFrontMatter: the front matter is not closed, is not a YAML
	// mapping, or a field has the wrong type.
	ReasonBadFrontMatter = "bad_front_matter"
	// ReasonMissingName, ReasonBadName: name absent or empty; not 1-64
	// lowercase letters, digits and single inner hyphens.
	ReasonMissingName = "missing_name"
	ReasonBadName     = "bad_name"
	// ReasonMissingDescription, ReasonBadDescription: description absent
	// or empty; longer than MaxDescriptionChars.
	ReasonMissingDescription = "missing_description"
	ReasonBadDescription     = "bad_description"
	// ReasonTooLarge: the file is over MaxSkillBytes.
	ReasonTooLarge = "too_large"
	// ReasonDuplicateName: an earlier valid skill (in listing order) has
	// the same name; the earlier one stays valid. A skill invalid for
	// another reason keeps that reason and claims no name.
	ReasonDuplicateName = "duplicate_name"
	// ReasonOutsideProject: the skill's path leaves the project (a
	// symlink out of it); nothing was read.
	ReasonOutsideProject = "outside_project"
	// ReasonUnreadable: SKILL.md is not a regular file or cannot be read.
	ReasonUnreadable = "unreadable"
)

// Skill is one listed skill. Name and Description are empty when the
// front matter could not give them; Revision is empty when the file was
// not read whole.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      string `json:"source" jsonschema:"agents (.agents/skills), claude (.claude/skills) or runner (the runner's skills.roots)"`
	Path        string `json:"path" jsonschema:"project-relative path of SKILL.md; skills.roots[i]/... for a runner's skill"`
	Revision    string `json:"revision" jsonschema:"hex SHA-256 of SKILL.md; empty when it was not read whole"`
	Status      string `json:"status" jsonschema:"valid or invalid"`
	Reason      string `json:"reason,omitempty" jsonschema:"why the skill is invalid"`
}

// InProject reports whether s is a file of the project (its Path a project
// path), rather than of a runner's own skills root.
func (s Skill) InProject() bool { return s.Source != SourceRunner }

// Listing is the skills of a project: at most MaxSkills, in listing
// order (.agents before .claude before the runner's roots in their order,
// directories by name). Total counts every
// skill directory found; Truncated is set when some are not listed.
type Listing struct {
	Skills    []Skill `json:"skills"`
	Total     int     `json:"total"`
	Truncated bool    `json:"truncated"`
}

// Parsed is a SKILL.md split into its front matter fields and its body.
type Parsed struct {
	Name        string
	Description string
	// Body is the Markdown after the closing "---" line.
	Body string
}

type frontMatter struct {
	Name        any `yaml:"name"`
	Description any `yaml:"description"`
}

// Parse splits data (a whole SKILL.md of at most MaxSkillBytes) and
// validates its front matter. It returns the reason the skill is invalid,
// or "" when it is valid. A UTF-8 byte order mark and CRLF line endings
// are accepted. The front matter ends at the first "---" line after the
// opening one, so a "---" in the body is body text.
func Parse(data []byte) (Parsed, string) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	first, rest, _ := cutLine(data)
	if !isFence(first) {
		return Parsed{}, ReasonNoFrontMatter
	}
	front := rest
	for len(rest) > 0 {
		line, after, _ := cutLine(rest)
		if isFence(line) {
			return fields(front[:len(front)-len(rest)], after)
		}
		rest = after
	}
	return Parsed{}, ReasonBadFrontMatter
}

// fields decodes the front matter text front and validates its fields;
// body is the text after the closing line.
func fields(front, body []byte) (Parsed, string) {
	var fm frontMatter
	if err := yaml.Unmarshal(front, &fm); err != nil {
		return Parsed{}, ReasonBadFrontMatter
	}
	p := Parsed{Body: string(body)}
	switch n := fm.Name.(type) {
	case nil:
		return p, ReasonMissingName
	case string:
		if n == "" {
			return p, ReasonMissingName
		}
		p.Name = n
		if !ValidName(n) {
			return p, ReasonBadName
		}
	default:
		return p, ReasonBadFrontMatter
	}
	switch d := fm.Description.(type) {
	case nil:
		return p, ReasonMissingDescription
	case string:
		d = strings.TrimSpace(d)
		if d == "" {
			return p, ReasonMissingDescription
		}
		if utf8.RuneCountInString(d) > MaxDescriptionChars {
			return p, ReasonBadDescription
		}
		p.Description = d
	default:
		return p, ReasonBadFrontMatter
	}
	return p, ""
}

// ValidName reports whether name is 1-MaxNameChars lowercase ASCII
// letters, digits and hyphens, neither starting nor ending with a hyphen
// and without two in a row.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameChars || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Revision is the revision digest of a SKILL.md's bytes.
func Revision(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// cutLine returns data's first line without its terminator ("\n" or
// "\r\n"), the rest after it, and whether a terminator was found.
func cutLine(data []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(data, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest, found
}

// isFence reports whether line is a front matter delimiter: "---" with
// optional trailing blanks.
func isFence(line []byte) bool {
	return string(bytes.TrimRight(line, " \t")) == "---"
}
