package evidence_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// golden is the record whose canonical encoding docs/evidence.md documents.
func golden() evidence.Record {
	return evidence.Record{
		InvocationID: "inv-1", At: time.Unix(1767225600, 0).UTC(), Tool: "read_files",
		Source: evidence.SourceMCP, TransportEra: "2025-11-25",
		Claim:    evidence.Claim{RecordingSessionID: "wc_sess_1", Project: "p", PrincipalKind: "api_token"},
		Verified: evidence.Verified{SessionID: "wc_sess_1", Project: "p", Authority: "a", Lifecycle: "active"},
		Binding:  evidence.BindingVerified, Reasons: []evidence.Reason{evidence.ReasonStoreMatch},
		CheckedKeys: []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyAuthority, evidence.KeyProject},
		SkippedKeys: []evidence.CheckKey{evidence.KeyLifecycle},
		Outcome:     evidence.OutcomeOK, DurationMS: 12,
		ArgumentsDigest: evidence.Digest([]byte(`{}`)),
	}
}

// TestCanonicalGolden pins the version-1 encoding: an outside verifier
// reimplementing docs/evidence.md must produce these bytes.
func TestCanonicalGolden(t *testing.T) {
	c, err := golden().Canonical("j1", "0a1b2c3d", 7)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(c, []byte("WCEV\x00\x01\x00\x00\x00\x02j1\x00\x00\x00\x080a1b2c3d\x00\x00\x00\x00\x00\x00\x00\x07")) {
		t.Fatalf("prefix % x", c[:40])
	}
	const wantLeaf = "5e53b3061d16a1770fb145b48247d9cb3c8205f72aa8a90878052b5aa1c139cf"
	got := hex.EncodeToString(evidence.LeafHash(c))
	t.Logf("golden canonical %d bytes, leaf %s", len(c), got)
	if got != wantLeaf {
		t.Fatalf("leaf %s, want %s", got, wantLeaf)
	}
	c0, _ := golden().Canonical("j1", "0a1b2c3d", 0)
	if !bytes.Equal(evidence.SetCanonicalIndex(c0, 7), c) {
		t.Fatal("SetCanonicalIndex differs from encoding with the index")
	}
	h, r, err := evidence.ParseCanonical(c)
	if err != nil || h != (evidence.Header{Version: 1, JournalID: "j1", KeyID: "0a1b2c3d", Index: 7}) {
		t.Fatalf("parse: %+v %v", h, err)
	}
	c2, _ := r.Canonical(h.JournalID, h.KeyID, h.Index)
	if !bytes.Equal(c, c2) {
		t.Fatal("round trip changed the bytes")
	}
	// Every truncation and any trailing byte is malformed.
	for i := 0; i < len(c); i++ {
		if _, _, err := evidence.ParseCanonical(c[:i]); !errors.Is(err, evidence.ErrMalformed) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
	if _, _, err := evidence.ParseCanonical(append(c, 0)); !errors.Is(err, evidence.ErrMalformed) {
		t.Fatal("trailing byte accepted")
	}
	v4 := bytes.Clone(c)
	v4[5] = 4
	if _, _, err := evidence.ParseCanonical(v4); !errors.Is(err, evidence.ErrUnsupportedSchema) {
		t.Fatalf("version 4: %v", err)
	}
	// A version-1 record relabelled as version 3 lacks replay_of and salt.
	v3 := bytes.Clone(c)
	v3[5] = 3
	if _, _, err := evidence.ParseCanonical(v3); !errors.Is(err, evidence.ErrMalformed) {
		t.Fatalf("version 3 without a salt: %v", err)
	}
	// Version 2 is a replay's encoding: a record that is no replay
	// relabelled as version 2 lacks the original it must name.
	v2 := bytes.Clone(c)
	v2[5] = 2
	if _, _, err := evidence.ParseCanonical(v2); !errors.Is(err, evidence.ErrMalformed) {
		t.Fatalf("version 2 without replay_of: %v", err)
	}
}

// replayGolden is the replay whose version-2 encoding docs/evidence.md
// documents: golden() as the replay of completion wc_cmp_1.
func replayGolden() evidence.Record {
	r := golden()
	r.Tool = "complete_session_message"
	r.Replayed, r.ReplayOf = true, "wc_cmp_1"
	return r
}

// TestCanonicalReplayGolden pins the version-2 encoding: the version-1
// fields, then replay_of. A record that is no replay keeps its version-1
// bytes (TestCanonicalGolden).
func TestCanonicalReplayGolden(t *testing.T) {
	r := replayGolden()
	c, err := r.Canonical("j1", "0a1b2c3d", 7)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(c, []byte("WCEV\x00\x02")) || !bytes.HasSuffix(c, []byte("\x00\x00\x00\x08wc_cmp_1")) {
		t.Fatalf("version 2 bytes % x", c)
	}
	noReplay := r
	noReplay.Replayed, noReplay.ReplayOf = false, ""
	c1, _ := noReplay.Canonical("j1", "0a1b2c3d", 7)
	if !bytes.Equal(c[6:len(c)-12], c1[6:]) {
		t.Fatal("version 2 is not version 1's fields followed by replay_of")
	}
	const wantLeaf = "943a9373dc2054b1ea23e5232a4d234c2a98b1fc6d3799fd712a07da1dbc3492"
	got := hex.EncodeToString(evidence.LeafHash(c))
	t.Logf("replay canonical %d bytes, leaf %s", len(c), got)
	if got != wantLeaf {
		t.Fatalf("leaf %s, want %s", got, wantLeaf)
	}
	h, back, err := evidence.ParseCanonical(c)
	if err != nil || h.Version != 2 || !back.Replayed || back.ReplayOf != "wc_cmp_1" {
		t.Fatalf("parse: %+v %+v %v", h, back, err)
	}
	c2, _ := back.Canonical(h.JournalID, h.KeyID, h.Index)
	if !bytes.Equal(c, c2) {
		t.Fatal("round trip changed the bytes")
	}
	c0, _ := r.Canonical("j1", "0a1b2c3d", 0)
	if !bytes.Equal(evidence.SetCanonicalIndex(c0, 7), c) {
		t.Fatal("SetCanonicalIndex differs from encoding with the index")
	}
	for i := 0; i < len(c); i++ {
		if _, _, err := evidence.ParseCanonical(c[:i]); !errors.Is(err, evidence.ErrMalformed) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
	// An empty replay_of in version-2 bytes is no replay: malformed.
	empty := append(bytes.Clone(c[:len(c)-12]), 0, 0, 0, 0)
	if _, _, err := evidence.ParseCanonical(empty); !errors.Is(err, evidence.ErrMalformed) {
		t.Fatalf("version 2 with an empty replay_of: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	cases := map[string]func(r *evidence.Record){
		"unknown source":            func(r *evidence.Record) { r.Source = "ftp" },
		"unknown outcome":           func(r *evidence.Record) { r.Outcome = "maybe" },
		"unknown binding":           func(r *evidence.Record) { r.Binding = "trusted" },
		"unknown key":               func(r *evidence.Record) { r.CheckedKeys = append(r.CheckedKeys, "color") },
		"checked and skipped":       func(r *evidence.Record) { r.SkippedKeys = []evidence.CheckKey{evidence.KeyProject} },
		"verified wrong reason":     func(r *evidence.Record) { r.Reasons = []evidence.Reason{evidence.ReasonNotRegistered} },
		"verified without session":  func(r *evidence.Record) { r.Verified.SessionID = "" },
		"no invocation id":          func(r *evidence.Record) { r.InvocationID = "" },
		"verified another session":  func(r *evidence.Record) { r.Verified.SessionID = "wc_sess_2" },
		"zero time":                 func(r *evidence.Record) { r.At = time.Time{} },
		"bad digest":                func(r *evidence.Record) { r.ResultDigest = "abc" },
		"long field":                func(r *evidence.Record) { r.Tool = string(bytes.Repeat([]byte("x"), evidence.MaxFieldBytes+1)) },
		"negative duration":         func(r *evidence.Record) { r.DurationMS = -1 },
		"duplicate reason":          func(r *evidence.Record) { r.Reasons = append(r.Reasons, r.Reasons[0]) },
		"replayed without original": func(r *evidence.Record) { r.Replayed = true },
		"original without replayed": func(r *evidence.Record) { r.ReplayOf = "wc_msg_1" },
		"failed replay": func(r *evidence.Record) {
			r.Replayed, r.ReplayOf, r.Outcome, r.ErrorKind = true, "wc_msg_1", evidence.OutcomeFailed, "idempotency_conflict"
		},
		"long replay_of": func(r *evidence.Record) {
			r.Replayed, r.ReplayOf = true, string(bytes.Repeat([]byte("x"), evidence.MaxFieldBytes+1))
		},
		"invalid_claim with verified": func(r *evidence.Record) {
			r.Binding, r.Reasons = evidence.BindingInvalidClaim, []evidence.Reason{evidence.ReasonNotRegistered}
		},
		"invalid_claim with a sessionless reason": func(r *evidence.Record) {
			r.Binding, r.Reasons, r.Verified = evidence.BindingInvalidClaim, []evidence.Reason{evidence.ReasonNoRecorderRequested}, evidence.Verified{}
		},
		"sessionless with a caller reason": func(r *evidence.Record) {
			r.Binding, r.Reasons, r.Verified = evidence.BindingSessionless, []evidence.Reason{"caller_said_so"}, evidence.Verified{}
			r.Claim.RecordingSessionID = ""
		},
		"sessionless with a claim": func(r *evidence.Record) {
			r.Binding, r.Reasons, r.Verified = evidence.BindingSessionless, []evidence.Reason{evidence.ReasonNoRecorderRequested}, evidence.Verified{}
		},
	}
	if err := golden().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := replayGolden().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range cases {
		r := golden()
		mut(&r)
		if err := r.Validate(); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTreeBuilderProofs(t *testing.T) {
	leaves := make([][]byte, 37)
	for i := range leaves {
		leaves[i] = evidence.LeafHash([]byte(fmt.Sprint(i)))
	}
	for size := uint64(1); size <= uint64(len(leaves)); size++ {
		tb := evidence.NewTreeBuilder()
		for i := uint64(0); i < size; i++ {
			tb.WantInclusion(i, size)
		}
		for s1 := uint64(0); s1 <= size; s1++ {
			tb.WantConsistency(s1, size)
			tb.WantRoot(s1)
		}
		for _, l := range leaves[:size] {
			tb.Append(l)
		}
		root := tb.Root()
		for i := uint64(0); i < size; i++ {
			p, err := tb.InclusionProof(i, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := proof.VerifyInclusion(evidence.Hasher, i, size, leaves[i], p, root); err != nil {
				t.Fatalf("inclusion %d/%d: %v", i, size, err)
			}
		}
		for s1 := uint64(0); s1 <= size; s1++ {
			r1, ok := tb.RootAt(s1)
			p, err := tb.ConsistencyProof(s1, size)
			if !ok || err != nil {
				t.Fatalf("consistency %d/%d: %v", s1, size, err)
			}
			if err := proof.VerifyConsistency(evidence.Hasher, s1, size, p, r1, root); err != nil {
				t.Fatalf("consistency %d/%d: %v", s1, size, err)
			}
		}
	}
}

func TestCheckpointBody(t *testing.T) {
	c := evidence.Checkpoint{Origin: "o.test/x", Size: 3, Root: make([]byte, 32)}
	got, err := evidence.ParseCheckpointBody(c.Body())
	if err != nil || !got.Equal(c) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"o\n", "o\n01\nAAAA\n", "o\n1\nAAAA\n", "\n1\n" + c.Body()[11:]} {
		if _, err := evidence.ParseCheckpointBody(bad); !errors.Is(err, evidence.ErrMalformedCheckpoint) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// goldenSalt is the salt of the version-3 golden vector: bytes 0..31.
func goldenSalt() []byte {
	s := make([]byte, evidence.SaltBytes)
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

// TestCanonicalSaltedGolden pins the version-3 encoding: version 1's
// fields, replay_of ("" here) and the 32 raw salt bytes, so an outside
// verifier can check its implementation of docs/evidence.md.
func TestCanonicalSaltedGolden(t *testing.T) {
	r := golden()
	r.Salt = goldenSalt()
	c, err := r.Canonical("j1", "0a1b2c3d", 7)
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := golden().Canonical("j1", "0a1b2c3d", 7)
	want := append(bytes.Clone(v1), 0, 0, 0, 0) // replay_of ""
	want = append(want, goldenSalt()...)
	want[5] = 3
	if !bytes.Equal(c, want) {
		t.Fatalf("version 3 is not version 1's fields + replay_of + salt:\n% x\n% x", c, want)
	}
	const wantLeaf = "887a8145e277063a4bf2111a940fbc9021c041923833899f51b61689e790c330"
	got := hex.EncodeToString(evidence.LeafHash(c))
	t.Logf("salted golden canonical %d bytes, leaf %s", len(c), got)
	if got != wantLeaf {
		t.Fatalf("leaf %s, want %s", got, wantLeaf)
	}
	h, back, err := evidence.ParseCanonical(c)
	if err != nil || h.Version != 3 || !bytes.Equal(back.Salt, goldenSalt()) || back.Replayed {
		t.Fatalf("parse: %+v %v", h, err)
	}
	if c2, _ := back.Canonical(h.JournalID, h.KeyID, h.Index); !bytes.Equal(c, c2) {
		t.Fatal("round trip changed the bytes")
	}
	// A salt of the wrong length, in a record or in the bytes, is refused.
	bad := golden()
	bad.Salt = []byte{1, 2, 3}
	if _, err := bad.Canonical("j1", "0a1b2c3d", 7); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("short salt: %v", err)
	}
	for _, b := range [][]byte{c[:len(c)-1], append(bytes.Clone(c), 0)} {
		if _, _, err := evidence.ParseCanonical(b); !errors.Is(err, evidence.ErrMalformed) {
			t.Fatalf("salt of %d bytes: %v", len(b)-len(v1)-4, err)
		}
	}
	// A salted replay keeps replay_of in version 3.
	rp := golden()
	rp.Replayed, rp.ReplayOf, rp.Outcome, rp.ErrorKind, rp.Salt = true, "wc_msg_1", evidence.OutcomeOK, "", goldenSalt()
	cr, err := rp.Canonical("j1", "0a1b2c3d", 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, back, err := evidence.ParseCanonical(cr); err != nil || !back.Replayed || back.ReplayOf != "wc_msg_1" {
		t.Fatalf("salted replay: %+v %v", back, err)
	}
	// Salted gives each record a fresh salt: the same payload has two
	// leaves, so a purged leaf does not confirm a guessed payload.
	a, b := evidence.Salted(golden()), evidence.Salted(golden())
	ca, _ := a.Canonical("j1", "0a1b2c3d", 7)
	cb, _ := b.Canonical("j1", "0a1b2c3d", 7)
	if len(a.Salt) != evidence.SaltBytes || bytes.Equal(evidence.LeafHash(ca), evidence.LeafHash(cb)) {
		t.Fatal("two salted encodings of one record share a leaf")
	}
	if kept := evidence.Salted(a); !bytes.Equal(kept.Salt, a.Salt) {
		t.Fatal("Salted replaced an existing salt")
	}
}
