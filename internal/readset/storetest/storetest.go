// Package storetest is the contract suite that every [readset.Store]
// implementation must pass, on SQLite and on PostgreSQL. Implementation
// packages call [Run] from their own tests with a constructor for a fresh,
// empty store and a second handle on the same database (another pool, as
// another replica or process would hold).
package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/readset"
)

// Open returns a fresh, empty store and a second handle on the same
// database (cleaned up by the constructor).
type Open func(t *testing.T) (readset.Store, readset.Store)

const (
	alice = "fp-alice"
	bob   = "fp-bob"
	proj  = "agent:local:p"
	other = "agent:local:q"
	sess1 = "wc_sess_1"
	sess2 = "wc_sess_2"
	sess3 = "wc_sess_3"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// digest is a distinct valid SHA-256 for n.
func digest(n int) string { return fmt.Sprintf("%064x", n+1) }

func read(owner, session, path string, d int, when time.Duration) readset.Observation {
	return readset.Observation{Owner: owner, Project: proj, Session: session, Path: path, SHA256: digest(d), At: at(when)}
}

func wrote(owner, session, path string, d int, when time.Duration) readset.Observation {
	o := read(owner, session, path, d, when)
	o.Wrote = true
	return o
}

// Run runs the readset.Store contract against stores returned by open.
func Run(t *testing.T, open Open) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, readset.Store, readset.Store)
	}{
		{"RecordAndReread", recordAndReread}, {"Bound", bound}, {"NoticeOnAnotherSessionsWrite", noticeOnWrite},
		{"NoNoticeForOwnChange", ownChange}, {"RereadClears", rereadClears}, {"UnknownObserver", unknownObserver},
		{"DeleteAndUnknownDigest", deleteAndUnknown}, {"OwnerIsolation", ownerIsolation}, {"TakeBound", takeBound},
		{"BadInputChangesNothing", badInput}, {"ConcurrentTakesDeliverOnce", concurrentTakes},
		{"RereadRefreshesLate", rereadRefreshesLate}, {"Forget", forget}, {"RecordReportsNotices", recordReportsNotices},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := open(t)
			c.fn(t, a, b)
		})
	}
}

func record(t *testing.T, st readset.Store, obs ...readset.Observation) {
	t.Helper()
	if _, err := st.Record(context.Background(), obs); err != nil {
		t.Fatal(err)
	}
}

// notifies records obs and reports whether Record said it made a notice.
func notifies(t *testing.T, st readset.Store, obs ...readset.Observation) bool {
	t.Helper()
	notified, err := st.Record(context.Background(), obs)
	if err != nil {
		t.Fatal(err)
	}
	return notified
}

// recordReportsNotices: Record reports notified exactly when it made or
// changed a pending notice, which is what a Tracker's cache of sessions
// with nothing pending relies on.
func recordReportsNotices(t *testing.T, st, second readset.Store) {
	for i, c := range []struct {
		st   readset.Store
		o    readset.Observation
		want bool
	}{
		{st, read(alice, sess1, "x.go", 1, 0), false},                    // a first read tells no one
		{second, read(alice, sess2, "x.go", 1, time.Millisecond), false}, // the same digest tells no one
		{second, wrote(alice, sess2, "x.go", 2, 2*time.Millisecond), true},
		{st, wrote(alice, sess2, "x.go", 2, 3*time.Millisecond), false}, // the notice already names this digest
		{st, read(alice, sess1, "x.go", 2, 4*time.Millisecond), false},  // the reader's re-read clears its own
		{second, read(alice, "", "x.go", 3, 5*time.Millisecond), true},  // a change seen by a call without a session
		{st, read(alice, sess2, "y.go", 4, 6*time.Millisecond), false},  // a path no one else read
	} {
		if got := notifies(t, c.st, c.o); got != c.want {
			t.Fatalf("observation %d (%+v): notified %v, want %v", i, c.o, got, c.want)
		}
	}
}

func reads(t *testing.T, st readset.Store, session string) string {
	t.Helper()
	rs, err := st.Reads(context.Background(), session, proj)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s=%s@%d;", r.Path, r.SHA256[:4]+r.SHA256[60:], r.At.Sub(t0)/time.Millisecond)
	}
	return b.String()
}

func take(t *testing.T, st readset.Store, session string, limit int) ([]readset.Notice, int) {
	t.Helper()
	ns, total, err := st.Take(context.Background(), session, proj, limit)
	if err != nil {
		t.Fatal(err)
	}
	return ns, total
}

func pending(t *testing.T, st readset.Store, session string) bool {
	t.Helper()
	ok, err := st.Pending(context.Background(), session, proj)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// recordAndReread: reads are kept per session, newest first; a re-read
// replaces the digest and the time; the second handle sees them.
func recordAndReread(t *testing.T, st, second readset.Store) {
	record(t, st, read(alice, sess1, "a.go", 1, 0), read(alice, sess1, "b.go", 2, time.Millisecond))
	record(t, second, read(alice, sess1, "a.go", 3, 2*time.Millisecond))
	want := fmt.Sprintf("a.go=%s@2;b.go=%s@1;", digest(3)[:4]+digest(3)[60:], digest(2)[:4]+digest(2)[60:])
	if got := reads(t, st, sess1); got != want {
		t.Fatalf("reads %s, want %s", got, want)
	}
	if reads(t, st, sess2) != "" || pending(t, st, sess1) {
		t.Fatal("another session has reads, or a session its own notice")
	}
}

// bound: a read set keeps the MaxReadsPerSession most recent paths; the
// oldest are evicted with their pending notices.
func bound(t *testing.T, st, _ readset.Store) {
	var obs []readset.Observation
	for i := range readset.MaxReadsPerSession + 3 {
		obs = append(obs, read(alice, sess1, fmt.Sprintf("f%04d", i), i, time.Duration(i)*time.Millisecond))
	}
	record(t, st, obs[:3]...)
	// f0000 changes under sess1 before it is evicted.
	record(t, st, wrote(alice, sess2, "f0000", 9999, 3*time.Millisecond))
	if !pending(t, st, sess1) {
		t.Fatal("no notice before eviction")
	}
	record(t, st, obs[3:]...)
	rs, err := st.Reads(context.Background(), sess1, proj)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != readset.MaxReadsPerSession || rs[len(rs)-1].Path != "f0003" || rs[0].Path != fmt.Sprintf("f%04d", readset.MaxReadsPerSession+2) {
		t.Fatalf("%d reads, oldest %s newest %s", len(rs), rs[len(rs)-1].Path, rs[0].Path)
	}
	if pending(t, st, sess1) {
		t.Fatal("the evicted read's notice is still pending")
	}
}

// noticeOnWrite: another session's write of a path a session read leaves
// it one notice naming the writer, delivered once; the delivered read is
// forgotten, so a later change is not told again until it re-reads.
func noticeOnWrite(t *testing.T, st, second readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0))
	record(t, second, wrote(alice, sess2, "x.go", 2, time.Millisecond))
	if pending(t, st, sess2) {
		t.Fatal("the writer has a notice")
	}
	ns, total := take(t, second, sess1, readset.MaxNoticesPerResult)
	want := readset.Notice{Path: "x.go", ReadSHA256: digest(1), SHA256: digest(2), ChangedBy: sess2, ObservedAt: at(time.Millisecond)}
	if total != 1 || len(ns) != 1 || ns[0] != want {
		t.Fatalf("took %+v (total %d), want %+v", ns, total, want)
	}
	if ns, total := take(t, st, sess1, readset.MaxNoticesPerResult); len(ns) != 0 || total != 0 || pending(t, st, sess1) {
		t.Fatalf("delivered twice: %+v %d", ns, total)
	}
	if got := reads(t, st, sess1); got != "" {
		t.Fatalf("the told read is still recorded: %s", got)
	}
	record(t, st, wrote(alice, sess2, "x.go", 3, 2*time.Millisecond))
	if pending(t, st, sess1) {
		t.Fatal("a change after delivery was told again before a re-read")
	}
}

// ownChange: a session's own write or read of another digest leaves it no
// notice; the same digest observed by another session leaves none either.
func ownChange(t *testing.T, st, _ readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0), wrote(alice, sess1, "x.go", 2, time.Millisecond),
		read(alice, sess2, "x.go", 2, 2*time.Millisecond), read(alice, sess1, "y.go", 3, 3*time.Millisecond),
		read(alice, sess1, "y.go", 4, 4*time.Millisecond))
	if pending(t, st, sess1) || pending(t, st, sess2) {
		t.Fatal("a notice for an own change or an equal digest")
	}
	want := fmt.Sprintf("y.go=%s@4;x.go=%s@1;", digest(4)[:4]+digest(4)[60:], digest(2)[:4]+digest(2)[60:])
	if got := reads(t, st, sess1); got != want {
		t.Fatalf("reads %s, want %s", got, want)
	}
}

// rereadClears: a session's re-read refreshes its digest and clears its
// pending notice for the path; a notice keeps its first author when the
// same new digest is observed again.
func rereadClears(t *testing.T, st, _ readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0), read(alice, sess1, "y.go", 1, 0))
	record(t, st, wrote(alice, sess2, "x.go", 2, time.Millisecond), wrote(alice, sess2, "y.go", 2, time.Millisecond))
	record(t, st, read(alice, sess3, "y.go", 2, 2*time.Millisecond))
	record(t, st, read(alice, sess1, "x.go", 2, 3*time.Millisecond))
	ns, total := take(t, st, sess1, readset.MaxNoticesPerResult)
	if total != 1 || len(ns) != 1 || ns[0].Path != "y.go" || ns[0].ChangedBy != sess2 || ns[0].ObservedAt != at(time.Millisecond) {
		t.Fatalf("took %+v (total %d), want only y.go by %s", ns, total, sess2)
	}
	if got := reads(t, st, sess1); !strings.HasPrefix(got, "x.go="+digest(2)[:4]) {
		t.Fatalf("the re-read did not refresh the digest: %s", got)
	}
}

// unknownObserver: a read of another digest by a call with no session,
// or a read (not a write) by another session, is a change by unknown; a
// later different digest replaces the notice's digest.
func unknownObserver(t *testing.T, st, _ readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0), read(alice, sess1, "y.go", 1, 0))
	record(t, st, read(alice, "", "x.go", 2, time.Millisecond), read(alice, sess2, "y.go", 2, time.Millisecond))
	record(t, st, read(alice, "", "x.go", 3, 2*time.Millisecond))
	ns, total := take(t, st, sess1, readset.MaxNoticesPerResult)
	if total != 2 || len(ns) != 2 || ns[0].Path != "y.go" || ns[0].ChangedBy != readset.Unknown ||
		ns[1].Path != "x.go" || ns[1].ChangedBy != readset.Unknown || ns[1].SHA256 != digest(3) || ns[1].ReadSHA256 != digest(1) {
		t.Fatalf("took %+v", ns)
	}
	if reads(t, st, "") != "" {
		t.Fatal("a call without a session was recorded in a read set")
	}
}

// deleteAndUnknown: a delete (or a change with no digest) is a notice
// without sha256 and removes the writer's own read.
func deleteAndUnknown(t *testing.T, st, _ readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0), read(alice, sess2, "x.go", 1, 0))
	del := wrote(alice, sess2, "x.go", 0, time.Millisecond)
	del.SHA256 = ""
	record(t, st, del)
	ns, _ := take(t, st, sess1, readset.MaxNoticesPerResult)
	if len(ns) != 1 || ns[0].SHA256 != "" || ns[0].ChangedBy != sess2 {
		t.Fatalf("took %+v", ns)
	}
	if reads(t, st, sess2) != "" {
		t.Fatal("the deleter still has a read of the deleted file")
	}
}

// ownerIsolation: another authority group's write is a change by
// unknown (its session id never reaches this group); another project's
// path of the same name is another file.
func ownerIsolation(t *testing.T, st, _ readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0))
	elsewhere := wrote(alice, sess2, "x.go", 2, time.Millisecond)
	elsewhere.Project = other
	record(t, st, elsewhere)
	if pending(t, st, sess1) {
		t.Fatal("a change on another project was noticed")
	}
	record(t, st, wrote(bob, sess3, "x.go", 2, time.Millisecond))
	ns, _ := take(t, st, sess1, readset.MaxNoticesPerResult)
	if len(ns) != 1 || ns[0].ChangedBy != readset.Unknown {
		t.Fatalf("took %+v, want changed_by unknown", ns)
	}
	if ok, err := st.Pending(context.Background(), sess1, other); err != nil || ok {
		t.Fatalf("pending on another project: %v %v", ok, err)
	}
}

// takeBound: Take delivers at most limit notices, oldest first, and
// counts them all; the rest come next.
func takeBound(t *testing.T, st, _ readset.Store) {
	n := readset.MaxNoticesPerResult + 5
	var obs, writes []readset.Observation
	for i := range n {
		obs = append(obs, read(alice, sess1, fmt.Sprintf("f%02d", i), 1, 0))
		writes = append(writes, wrote(alice, sess2, fmt.Sprintf("f%02d", i), 2, time.Duration(n-i)*time.Millisecond))
	}
	record(t, st, obs...)
	record(t, st, writes...)
	ns, total := take(t, st, sess1, readset.MaxNoticesPerResult)
	if len(ns) != readset.MaxNoticesPerResult || total != n || ns[0].Path != fmt.Sprintf("f%02d", n-1) {
		t.Fatalf("took %d (total %d), first %s", len(ns), total, ns[0].Path)
	}
	if ns, total := take(t, st, sess1, readset.MaxNoticesPerResult); len(ns) != 5 || total != 5 || ns[4].Path != "f00" {
		t.Fatalf("then took %d (total %d)", len(ns), total)
	}
}

// badInput: a batch with an invalid observation is invalid_arguments and
// records nothing of the batch.
func badInput(t *testing.T, st, _ readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0))
	before := reads(t, st, sess1)
	good := wrote(alice, sess2, "x.go", 2, time.Millisecond)
	for name, bad := range map[string]func(*readset.Observation){
		"upper-case digest": func(o *readset.Observation) { o.SHA256 = strings.Repeat("AB", 32) },
		"short digest":      func(o *readset.Observation) { o.SHA256 = "abc" },
		"no path":           func(o *readset.Observation) { o.Path = "" },
		"no project":        func(o *readset.Observation) { o.Project = "" },
		"no owner":          func(o *readset.Observation) { o.Owner = "" },
	} {
		o := read(alice, sess2, "y.go", 3, 2*time.Millisecond)
		bad(&o)
		_, err := st.Record(context.Background(), []readset.Observation{good, o})
		if !failure.Is(err, failure.InvalidArguments) {
			t.Fatalf("%s: %v, want invalid_arguments", name, err)
		}
	}
	if reads(t, st, sess1) != before || reads(t, st, sess2) != "" || pending(t, st, sess1) {
		t.Fatal("a refused batch changed the store")
	}
}

// concurrentTakes: two handles taking one session's notice at once
// deliver it exactly once.
func concurrentTakes(t *testing.T, st, second readset.Store) {
	for round := range 5 {
		path := fmt.Sprintf("r%d.go", round)
		record(t, st, read(alice, sess1, path, 1, 0))
		record(t, st, wrote(alice, sess2, path, 2, time.Millisecond))
		var wg sync.WaitGroup
		got := make([]int, 2)
		errs := make([]error, 2)
		for i, h := range []readset.Store{st, second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ns, _, err := h.Take(context.Background(), sess1, proj, readset.MaxNoticesPerResult)
				got[i], errs[i] = len(ns), err
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil || got[0]+got[1] != 1 {
			t.Fatalf("round %d: delivered %v times (%v)", round, got, errs)
		}
	}
}

// rereadRefreshesLate: a re-read of the same digest keeps the read's
// time until it is ReadRefresh old, then refreshes it.
func rereadRefreshesLate(t *testing.T, st, _ readset.Store) {
	record(t, st, read(alice, sess1, "x.go", 1, 0))
	record(t, st, read(alice, sess1, "x.go", 1, readset.ReadRefresh-time.Millisecond))
	if got := reads(t, st, sess1); !strings.HasSuffix(got, "@0;") {
		t.Fatalf("refreshed early: %s", got)
	}
	record(t, st, read(alice, sess1, "x.go", 1, readset.ReadRefresh))
	if got, want := reads(t, st, sess1), fmt.Sprintf("@%d;", readset.ReadRefresh.Milliseconds()); !strings.HasSuffix(got, want) {
		t.Fatalf("not refreshed: %s, want %s", got, want)
	}
}

// forget: a forgotten session's reads and notices are gone on every
// project; other sessions' are kept.
func forget(t *testing.T, st, second readset.Store) {
	elsewhere := read(alice, sess1, "x.go", 1, 0)
	elsewhere.Project = other
	record(t, st, read(alice, sess1, "x.go", 1, 0), elsewhere, read(alice, sess2, "x.go", 1, 0))
	record(t, st, wrote(alice, sess3, "x.go", 2, time.Millisecond))
	if err := second.Forget(context.Background(), []string{sess1}); err != nil {
		t.Fatal(err)
	}
	if rs, err := st.Reads(context.Background(), sess1, other); err != nil || len(rs) != 0 || reads(t, st, sess1) != "" || pending(t, st, sess1) {
		t.Fatalf("sess1 kept %v %v", rs, err)
	}
	if !pending(t, st, sess2) || reads(t, st, sess2) == "" {
		t.Fatal("another session's read set was forgotten")
	}
}
