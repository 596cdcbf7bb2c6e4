package sandboxaudit

import (
	"testing"
)

// Records as the kernel sent them on the read-log (Linux 6.18, Landlock
// ABI 7), captured from TestSandboxDenialsReachTheAuditLog: a sandboxed
// `bash -c 'echo x > OUTSIDE/y'` started by the test process (pid 3980).
// The deallocated record is of the documented form (none was captured:
// audit was turned off first).
const (
	capturedAccess    = `audit(1796398736.861:2): domain=1f4099a62 blockers=fs.make_reg path="/tmp/TestSandboxDenialsReachTheAuditLog1059452088/003" dev="vda" ino=10620406`
	capturedAllocated = `audit(1796398736.861:2): domain=1f4099a62 status=allocated mode=enforcing pid=3980 uid=0 exe="/tmp/go-build1222848101/b001/runner.test" comm="runner.test"`
	capturedFreed     = `audit(1796398737.990:5): domain=1f4099a62 status=deallocated denials=1`
)

func TestParseRecord(t *testing.T) {
	for _, c := range []struct {
		name    string
		typ     uint16
		payload string
		want    record
	}{
		{"access", TypeLandlockAccess, capturedAccess, record{kind: access, serial: 2, domain: 0x1f4099a62, class: 0}},
		{"NUL-terminated", TypeLandlockAccess, capturedAccess + "\x00", record{kind: access, serial: 2, domain: 0x1f4099a62, class: 0}},
		{"allocated", TypeLandlockDomain, capturedAllocated, record{kind: allocated, serial: 2, domain: 0x1f4099a62, pid: 3980}},
		{"deallocated", TypeLandlockDomain, capturedFreed, record{kind: deallocated, serial: 5, domain: 0x1f4099a62}},
		{"net", TypeLandlockAccess, `audit(1.2:3): domain=a blockers=net.connect_tcp daddr=127.0.0.1 dest=80`, record{kind: access, serial: 3, domain: 10, class: 1}},
		{"scope", TypeLandlockAccess, `audit(1.2:4): domain=b blockers=scope.signal opid=1 ocomm="systemd"`, record{kind: access, serial: 4, domain: 11, class: 2}},
		{"ptrace", TypeLandlockAccess, `audit(1.2:5): domain=c blockers=ptrace opid=1 ocomm="systemd"`, record{kind: access, serial: 5, domain: 12, class: 3}},
		{"first blocker", TypeLandlockAccess, `audit(1.2:6): domain=d blockers=fs.make_reg,fs.refer path="/usr/local"`, record{kind: access, serial: 6, domain: 13, class: 0}},
		{"unknown class", TypeLandlockAccess, `audit(1.2:7): domain=e blockers=ns.create`, record{kind: access, serial: 7, domain: 14, class: len(Classes) - 1}},
		// A path cannot forge a field: the first domain= token counts, and
		// a value with a space is hex-encoded by the kernel.
		{"forged path", TypeLandlockAccess, `audit(1.2:8): domain=f blockers=fs.read_file path="/x/domain=1"`, record{kind: access, serial: 8, domain: 15, class: 0}},
	} {
		got, ok := parseRecord(c.typ, []byte(c.payload))
		if !ok || got != c.want {
			t.Errorf("%s: parseRecord = %+v, %v; want %+v", c.name, got, ok, c.want)
		}
	}
}

func TestParseRecordRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct {
		name    string
		typ     uint16
		payload string
	}{
		{"other type", 1300, capturedAccess},
		{"no header", TypeLandlockAccess, `domain=1 blockers=fs.read_file`},
		{"bad serial", TypeLandlockAccess, `audit(1.2:x): domain=1 blockers=fs.read_file`},
		{"no domain", TypeLandlockAccess, `audit(1.2:3): blockers=fs.read_file`},
		{"domain not hex", TypeLandlockAccess, `audit(1.2:3): domain=zz blockers=fs.read_file`},
		{"no blockers", TypeLandlockAccess, `audit(1.2:3): domain=1 path="/x"`},
		{"empty blockers", TypeLandlockAccess, `audit(1.2:3): domain=1 blockers= path="/x"`},
		{"unknown status", TypeLandlockDomain, `audit(1.2:3): domain=1 status=frozen`},
		{"allocated without pid", TypeLandlockDomain, `audit(1.2:3): domain=1 status=allocated mode=enforcing`},
	} {
		if got, ok := parseRecord(c.typ, []byte(c.payload)); ok {
			t.Errorf("%s: parsed %+v", c.name, got)
		}
	}
}

// must parses a record the test knows to be well formed.
func must(t *testing.T, typ uint16, payload string) record {
	t.Helper()
	r, ok := parseRecord(typ, []byte(payload))
	if !ok {
		t.Fatalf("parse %q", payload)
	}
	return r
}

func TestTallyCountsOnlyThisProcessesDomains(t *testing.T) {
	tl := newTally(3980)
	// Our domain's first denial: attributed by the allocated record of
	// the same event, then counted once although the event has two
	// access records.
	tl.add(must(t, TypeLandlockAccess, capturedAccess))
	tl.add(must(t, TypeLandlockAccess, `audit(1796398736.861:2): domain=1f4099a62 blockers=fs.refer path="/usr/local"`))
	if got := tl.counts().Denials[0]; got != 0 {
		t.Fatalf("counted %d before the domain was attributed", got)
	}
	tl.add(must(t, TypeLandlockDomain, capturedAllocated))
	tl.add(must(t, TypeLandlockDomain, capturedAllocated)) // the kernel may log it twice
	// A later denial of the same domain counts at once.
	tl.add(must(t, TypeLandlockAccess, `audit(1796398736.900:3): domain=1f4099a62 blockers=net.bind_tcp src=80`))
	// Another process's domain is never counted.
	tl.add(must(t, TypeLandlockAccess, `audit(1796398736.950:4): domain=abc blockers=fs.read_file path="/etc"`))
	tl.add(must(t, TypeLandlockDomain, `audit(1796398736.950:4): domain=abc status=allocated mode=enforcing pid=77 uid=0 exe="/bin/sandboxer" comm="s"`))
	c := tl.counts()
	if c.Denials[0] != 1 || c.Denials[1] != 1 || c.Denials[2]+c.Denials[3]+c.Denials[4] != 0 {
		t.Errorf("denials %v, want fs 1, net 1", c.Denials)
	}
	// Freed, the domain is forgotten.
	tl.add(must(t, TypeLandlockDomain, capturedFreed))
	if len(tl.ours) != 0 {
		t.Errorf("domains remembered after deallocation: %v", tl.ours)
	}
}

func TestTallyBounds(t *testing.T) {
	if MaxDomains != 4096 || RecentEvents != 64 || ReadBufferBytes != 16<<10 || MinLandlockABI != 7 {
		t.Fatalf("bounds changed: %d %d %d %d", MaxDomains, RecentEvents, ReadBufferBytes, MinLandlockABI)
	}
	tl := newTally(1)
	serial := uint64(0)
	first := func(domain uint64) {
		serial++
		tl.add(record{kind: access, serial: serial, domain: domain})
		tl.add(record{kind: allocated, serial: serial, domain: domain, pid: 1})
	}
	for d := range uint64(MaxDomains + 3) {
		first(d + 1)
	}
	c := tl.counts()
	if len(tl.ours) != MaxDomains || c.Denials[0] != MaxDomains+3 || c.DomainsDropped != 3 {
		t.Errorf("remembered %d, counted %d, dropped %d", len(tl.ours), c.Denials[0], c.DomainsDropped)
	}
	// The allocated record of an event pushed out of the recent ones
	// attributes nothing: its first denial is not counted twice or late.
	tl = newTally(1)
	tl.add(record{kind: access, serial: 1, domain: 9})
	for s := range uint64(RecentEvents) {
		tl.add(record{kind: access, serial: s + 2, domain: 100})
	}
	tl.add(record{kind: allocated, serial: 1, domain: 9, pid: 1})
	if c := tl.counts(); c.Denials[0] != 0 {
		t.Errorf("counted %d for a forgotten event", c.Denials[0])
	}
}
