// Package sandboxaudit counts the Landlock denials of this process's
// sandboxed children from the kernel's audit log (decision 0088).
//
// A Landlock denial is an EACCES seen only by the confined process; the
// kernel also logs it to the audit subsystem (Landlock ABI 7, when audit
// is enabled and the domain asks for it: the runner's sandbox sets
// LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON so that the programs its children
// exec are logged). A Reader listens on the audit read-log multicast group
// (NETLINK_AUDIT, AUDIT_NLGRP_READLOG, which needs CAP_AUDIT_READ), parses
// the AUDIT_LANDLOCK_ACCESS and AUDIT_LANDLOCK_DOMAIN records and counts
// one denial per audit event whose blocking domain this process created:
// the kernel logs a domain's creator (its thread group id, the pid field
// of the domain's "allocated" record) with the domain's first logged
// denial, and this process's confined threads are the creators of every
// sandbox domain. Denials of other processes' domains on the host are
// never counted.
//
// Counts are by class (the blockers' prefix: fs, net, scope, ptrace or
// other), never by path, pid or domain. The state the reader keeps is
// bounded: MaxDomains attributed domains (freed by the kernel's
// "deallocated" record), RecentEvents events for attribution and
// deduplication, one ReadBufferBytes datagram buffer.
package sandboxaudit

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
)

// MinLandlockABI is the first Landlock ABI that logs denials to audit
// (and takes the LANDLOCK_RESTRICT_SELF_LOG_* flags).
const MinLandlockABI = 7

// Audit record types (linux/audit.h).
const (
	TypeLandlockAccess = 1423
	TypeLandlockDomain = 1424
)

// Classes are the class label values of the denial counter, in index
// order: the prefix of a record's first blocker (fs.write_file → fs;
// ptrace has no prefix), anything else ClassOther.
var Classes = []string{"fs", "net", "scope", "ptrace", ClassOther}

// ClassOther is the class of a blocker this package does not know.
const ClassOther = "other"

// MaxDomains bounds the domains attributed to this process at once. The
// kernel frees each with a "deallocated" record; a domain beyond the bound
// is counted at its first denial (the one that names its creator) and its
// later denials are missed (Counts.DomainsDropped says how many domains).
const MaxDomains = 4096

// RecentEvents bounds the audit events remembered for attribution (a
// domain's first denial is followed by its "allocated" record in the same
// event) and for counting an event of several access records once.
const RecentEvents = 64

// ReadBufferBytes is the buffer one audit datagram is read into: a record
// is at most MAX_AUDIT_MESSAGE_LENGTH (8970) bytes with its netlink header.
const ReadBufferBytes = 16 << 10

// Counts is a snapshot of what a Reader counted.
type Counts struct {
	// Denials are the denials of this process's domains, by class
	// (indexed like Classes).
	Denials []uint64
	// Overruns counts the times the socket's receive buffer overflowed
	// (records were dropped before the reader saw them).
	Overruns uint64
	// DomainsDropped counts this process's domains the bound MaxDomains
	// kept from being remembered: their later denials were not counted.
	DomainsDropped uint64
}

// recordKind is what a parsed record says.
type recordKind int

const (
	access recordKind = iota + 1
	allocated
	deallocated
)

// record is one parsed Landlock audit record.
type record struct {
	kind   recordKind
	serial uint64 // the audit event's serial number
	domain uint64
	class  int // index in Classes (access records)
	pid    int // the domain's creator (allocated records)
}

// parseRecord parses a Landlock audit record of type typ whose text is
// payload ("audit(SECONDS.MILLIS:SERIAL): field=value ..."). Values that
// could hold a space are hex-encoded by the kernel, so fields are the
// space-separated tokens; the first of each name counts. ok is false for
// any other record type or a record missing a field it needs.
func parseRecord(typ uint16, payload []byte) (r record, ok bool) {
	payload = bytes.TrimRight(payload, "\x00\n")
	rest, found := bytes.CutPrefix(payload, []byte("audit("))
	if !found {
		return record{}, false
	}
	head, body, found := bytes.Cut(rest, []byte("): "))
	if !found {
		return record{}, false
	}
	_, serial, found := bytes.Cut(head, []byte(":"))
	if !found {
		return record{}, false
	}
	var err error
	if r.serial, err = strconv.ParseUint(string(serial), 10, 64); err != nil {
		return record{}, false
	}
	fields := map[string][]byte{}
	for _, tok := range bytes.Fields(body) {
		k, v, found := bytes.Cut(tok, []byte("="))
		if _, seen := fields[string(k)]; found && !seen {
			fields[string(k)] = v
		}
	}
	if r.domain, err = strconv.ParseUint(string(fields["domain"]), 16, 64); err != nil {
		return record{}, false
	}
	switch typ {
	case TypeLandlockAccess:
		b, found := fields["blockers"]
		if !found || len(b) == 0 {
			return record{}, false
		}
		r.kind, r.class = access, classOf(b)
	case TypeLandlockDomain:
		switch string(fields["status"]) {
		case "allocated":
			pid, err := strconv.Atoi(string(fields["pid"]))
			if err != nil {
				return record{}, false
			}
			r.kind, r.pid = allocated, pid
		case "deallocated":
			r.kind = deallocated
		default:
			return record{}, false
		}
	default:
		return record{}, false
	}
	return r, true
}

// classOf is the class index of a blockers value: its first blocker's
// prefix.
func classOf(blockers []byte) int {
	first, _, _ := bytes.Cut(blockers, []byte(","))
	prefix, _, _ := bytes.Cut(first, []byte("."))
	for i, c := range Classes {
		if string(prefix) == c {
			return i
		}
	}
	return len(Classes) - 1
}

// event is a recent audit event with a Landlock access record.
type event struct {
	serial  uint64
	domain  uint64
	class   int
	counted bool
}

// tally attributes and counts parsed records. add runs on one goroutine
// (the reader's); the counters are read from any.
type tally struct {
	pid      int
	ours     map[uint64]struct{}
	recent   [RecentEvents]event
	next     int
	denials  []atomic.Uint64
	overruns atomic.Uint64
	dropped  atomic.Uint64
	// counted is closed, and replaced under mu, whenever a denial is
	// counted (Reader.Wait).
	mu      sync.Mutex
	counted chan struct{}
}

func newTally(pid int) *tally {
	return &tally{pid: pid, ours: map[uint64]struct{}{}, denials: make([]atomic.Uint64, len(Classes)), counted: make(chan struct{})}
}

// find is the recent event with serial (nil when none).
func (t *tally) find(serial uint64) *event {
	for i := range t.recent {
		if e := &t.recent[i]; e.serial == serial && serial != 0 {
			return e
		}
	}
	return nil
}

// add counts r: an access record of a domain of ours is a denial (once per
// event); an allocated record naming this process as the creator makes the
// domain ours and counts the access record that preceded it in its event;
// a deallocated record forgets the domain.
func (t *tally) add(r record) {
	switch r.kind {
	case access:
		if t.find(r.serial) != nil {
			return // another access record of a counted or pending event
		}
		e := event{serial: r.serial, domain: r.domain, class: r.class}
		if _, mine := t.ours[r.domain]; mine {
			e.counted = true
			t.count(r.class)
		}
		t.recent[t.next] = e
		t.next = (t.next + 1) % RecentEvents
	case allocated:
		e := t.find(r.serial)
		if r.pid != t.pid || e == nil || e.domain != r.domain || e.counted {
			return
		}
		e.counted = true
		t.count(e.class)
		if len(t.ours) < MaxDomains {
			t.ours[r.domain] = struct{}{}
		} else {
			t.dropped.Add(1)
		}
	case deallocated:
		delete(t.ours, r.domain)
	}
}

// count counts a denial of class and wakes the waiters.
func (t *tally) count(class int) {
	t.denials[class].Add(1)
	t.mu.Lock()
	close(t.counted)
	t.counted = make(chan struct{})
	t.mu.Unlock()
}

// nextCount is closed at the next count.
func (t *tally) nextCount() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counted
}

// counts is a snapshot of the counters.
func (t *tally) counts() Counts {
	c := Counts{Denials: make([]uint64, len(t.denials)), Overruns: t.overruns.Load(), DomainsDropped: t.dropped.Load()}
	for i := range t.denials {
		c.Denials[i] = t.denials[i].Load()
	}
	return c
}

// A Reader counts the denials of this process's sandbox domains from the
// audit read-log until it is closed or its context ends (Start).
type Reader struct {
	t       *tally
	running atomic.Bool
	stop    func()
	done    chan struct{}
}

// Counts is a snapshot of what r counted (zero for a nil Reader).
func (r *Reader) Counts() Counts {
	if r == nil {
		return Counts{Denials: make([]uint64, len(Classes))}
	}
	return r.t.counts()
}

// Running reports whether r is reading the audit log now: false for a
// nil Reader and once it stopped (closed, its context ended, or the
// socket failed).
func (r *Reader) Running() bool { return r != nil && r.running.Load() }

// Observed reports whether the denials r counts are every logged denial
// of this process's domains: r is running and the kernel's audit is
// enabled now (AuditEnabled; an unreadable status is not enabled). Its
// error says why not.
func (r *Reader) Observed() (bool, error) {
	if !r.Running() {
		return false, errors.New("the audit log reader is not running")
	}
	on, err := AuditEnabled()
	switch {
	case err != nil:
		return false, err
	case !on:
		return false, ErrAuditDisabled
	}
	return true, nil
}

// ErrAuditDisabled is the kernel's audit being off (AUDIT_GET enabled=0):
// no Landlock record is logged. WebCodex never turns it on; an operator
// does (auditctl -e 1).
var ErrAuditDisabled = errors.New("kernel audit is disabled (enabled=0; auditctl -e 1 turns it on): Landlock denials are not logged")

// Total is the sum of c's denials over the classes.
func (c Counts) Total() uint64 {
	var n uint64
	for _, d := range c.Denials {
		n += d
	}
	return n
}

// Wait blocks until r has counted at least n denials in all, ctx ends
// (its error) or r stops (an error saying so). The kernel delivers audit
// records after the denial, asynchronously: a caller that caused a denial
// waits here rather than reading the counts at once.
func (r *Reader) Wait(ctx context.Context, n uint64) error {
	if r == nil {
		return errors.New("no audit log reader")
	}
	for {
		next := r.t.nextCount()
		if r.Counts().Total() >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.done:
			return errors.New("the audit log reader stopped")
		case <-next:
		}
	}
}

// Close stops r and waits for its reader to end; a nil Reader is a no-op.
func (r *Reader) Close() {
	if r == nil {
		return
	}
	r.stop()
	<-r.done
}
