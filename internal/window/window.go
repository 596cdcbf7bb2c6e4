// Package window is the window plane: bounded, observational facts about
// host agent windows (a ChatGPT conversation, a Claude Code or Codex
// session) and the small Window Peer communication plane between windows
// of one authenticated principal.
//
// A ClientWindow is not a session type. It is a domain-separated hash of
// host-owned window metadata (MCP _meta["openai/session"], or the REST
// header HeaderWindow) bound to the authenticated principal; the raw value
// is never stored, logged or returned. Neither a window nor a wc_peer_* id
// selects a Workflow Session, grants Project authority, proves liveness or
// identifies a model turn.
//
// Window activity is the last meaningful call of a window on a project
// (status and discovery calls are not meaningful, see [Meaningful]). Peers
// are the other windows of the same principal (authority group) with
// meaningful activity on the exact same project within [Recent]: "recent",
// never "online". A peer route (wc_peer_*) is derived from the hashed
// window and the principal; it is not reversible and resolves for no other
// principal.
package window

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/auth"
)

// Bounds. Each is part of the documented contract (docs/tools.md, decision
// 0032).
const (
	// Recent is the discovery recency: a peer had meaningful activity on
	// the exact project less than this long ago.
	Recent = 10 * time.Minute
	// ActivityRetention is how long a window's activity row is kept after
	// its last meaningful call; a peer id resolves only while its window
	// has a retained row.
	ActivityRetention = 24 * time.Hour
	// MaxActivityRowsPerPrincipal bounds the activity rows (one per window
	// and project) kept per principal; the least recently active go first.
	MaxActivityRowsPerPrincipal = 256
	// MessageRetention is how long a peer message is retained.
	MessageRetention = 24 * time.Hour
	// MaxMessagesPerWindow bounds the retained messages addressed to one
	// window (the oldest are pruned first).
	MaxMessagesPerWindow = 50
	// MaxMessageChars bounds a peer message body (Unicode code points).
	MaxMessageChars = 2000
	// MaxPeers bounds a discovery answer (most recently active first).
	MaxPeers = 16
	// AffinityRecent is how recent a window's explicit session affinity
	// must be for a recorder continuity gap diagnostic to suggest it.
	AffinityRecent = 30 * time.Minute
	// MaxRawBytes bounds an accepted raw host window value.
	MaxRawBytes = 256
)

// HeaderWindow is the REST request header a host that is not an MCP
// client may send its window id in; it is hashed exactly like
// _meta["openai/session"].
const HeaderWindow = "x-webcodex-window"

// hashDomain separates ClientWindow hashes from every other hash.
const hashDomain = "webcodex.client-window.v1"

// peerDomain separates peer ids from every other hash.
const peerDomain = "webcodex.window-peer.v1"

// PeerPrefix starts every peer id.
const PeerPrefix = "wc_peer_"

// Hash returns the domain-separated hash of a raw host window value bound
// to p, or "" when the value is absent or malformed: empty, longer than
// MaxRawBytes, not UTF-8, or holding a control or space character. Such a
// value is ignored as absent; it is never stored raw.
func Hash(raw string, p auth.Principal) string {
	if raw == "" || len(raw) > MaxRawBytes || !utf8.ValidString(raw) {
		return ""
	}
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return ""
		}
	}
	return digest(hashDomain, string(p.Kind), p.ID, p.Owner, raw)
}

// PrincipalOf is the principal correlation windows are grouped by: the
// authority fingerprint of p (every credential of one owner is one
// principal, as for Workflow Session authority).
func PrincipalOf(p auth.Principal) string { return p.AuthorityFingerprint() }

// PeerID returns the wc_peer_* route of window for principal (a
// correlation from PrincipalOf): a one-way digest of both, so it reveals
// neither and names nothing for another principal.
func PeerID(principal, window string) string {
	return PeerPrefix + digest(peerDomain, principal, window)[:32]
}

func digest(fields ...string) string {
	h := sha256.New()
	for _, f := range fields {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// statusTools are the status and discovery tools: a call of one is not
// meaningful window activity (nor loop-timing or continuity evidence).
var statusTools = map[string]bool{
	"list_tools": true, "describe_tool": true, "list_sessions": true, "session_summary": true,
	"session_shell_status": true, "list_jobs": true, "observe_jobs": true, "validation_summary": true,
	"session_discussion_summary": true, "observe_session_messages": true,
	ToolListPeers: true, ToolCurrentActivity: true, ToolPostPeerMessage: true,
}

// The window plane's own tools.
const (
	ToolListPeers       = "list_peers"
	ToolPostPeerMessage = "post_peer_message"
	ToolCurrentActivity = "current_window_activity"
)

// Meaningful reports whether a call is meaningful window activity: it
// resolved a project, was not refused before its tool ran, and its tool
// is not a status or discovery tool. This is the one place the fact is
// decided; activity, peers and audit loop timing all use it.
func Meaningful(tool, project string, refused bool) bool {
	return project != "" && !refused && tool != "" && !statusTools[tool]
}
