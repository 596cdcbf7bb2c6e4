package sandboxaudit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readLogGroup is AUDIT_NLGRP_READLOG, the multicast group of every audit
// record (binding it needs CAP_AUDIT_READ).
const readLogGroup = 1

// ReceiveBufferBytes is the multicast socket's kernel receive buffer: the
// records that may wait while the reader is behind. Beyond it the kernel
// drops records for this socket (counted as Counts.Overruns).
const ReceiveBufferBytes = 1 << 20

// StatusTimeout bounds the wait for the kernel's answer to AUDIT_GET or
// AUDIT_SET.
const StatusTimeout = 2 * time.Second

// auditStatusMaskEnabled is AUDIT_STATUS_ENABLED, the mask bit of
// audit_status.enabled in AUDIT_SET.
const auditStatusMaskEnabled = 1

// Start opens the audit read-log and counts, until ctx ends or Close, the
// Landlock denials of the domains whose creator is pid (the caller passes
// os.Getpid(): its confined threads create every sandbox domain). It fails
// when the socket cannot be opened or bound (no CAP_AUDIT_READ, not in
// the initial network namespace); it does not check that audit is
// enabled (Observed does).
func Start(ctx context.Context, pid int) (*Reader, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("sandbox denials: audit socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: readLogGroup}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sandbox denials: join the audit read-log (needs CAP_AUDIT_READ): %w", err)
	}
	// Best effort: a smaller buffer only makes overruns likelier, and
	// overruns are counted.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, ReceiveBufferBytes)
	f := os.NewFile(uintptr(fd), "audit-readlog")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox denials: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Reader{t: newTally(pid), stop: cancel, done: make(chan struct{})}
	r.running.Store(true)
	go func() {
		<-ctx.Done()
		f.Close() // ends a blocked read
	}()
	go func() {
		defer close(r.done)
		defer r.running.Store(false)
		r.read(rc)
	}()
	return r, nil
}

// read counts the records arriving on rc until it is closed or fails.
func (r *Reader) read(rc syscall.RawConn) {
	buf := make([]byte, ReadBufferBytes)
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), buf, 0)
			return !errors.Is(rerr, unix.EAGAIN)
		}); err != nil {
			return // closed
		}
		switch {
		case errors.Is(rerr, unix.ENOBUFS):
			r.t.overruns.Add(1)
			continue
		case errors.Is(rerr, unix.EINTR):
			continue
		case rerr != nil:
			return
		}
		// One record per datagram: its netlink header, then its text.
		if n < unix.NLMSG_HDRLEN {
			continue
		}
		typ := binary.NativeEndian.Uint16(buf[4:6])
		if typ != TypeLandlockAccess && typ != TypeLandlockDomain {
			continue
		}
		if rec, ok := parseRecord(typ, buf[unix.NLMSG_HDRLEN:n]); ok {
			r.t.add(rec)
		}
	}
}

// AuditEnabled asks the kernel whether audit is enabled (AUDIT_GET:
// enabled 1, or 2 when locked). It needs CAP_AUDIT_CONTROL; without it
// the error says so and nothing can be known.
func AuditEnabled() (bool, error) {
	var status [8]byte
	if err := auditRequest(unix.AUDIT_GET, nil, status[:]); err != nil {
		return false, fmt.Errorf("read the kernel's audit status (AUDIT_GET, needs CAP_AUDIT_CONTROL): %w", err)
	}
	return binary.NativeEndian.Uint32(status[4:]) != 0, nil
}

// SetAuditEnabled turns the kernel's audit on or off (AUDIT_SET). Tests
// only (audittest): the server never changes the kernel's audit state.
func SetAuditEnabled(on bool) error {
	var set [8]byte
	binary.NativeEndian.PutUint32(set[0:], auditStatusMaskEnabled)
	if on {
		binary.NativeEndian.PutUint32(set[4:], 1)
	}
	if err := auditRequest(unix.AUDIT_SET, set[:], nil); err != nil {
		return fmt.Errorf("set the kernel's audit status (AUDIT_SET): %w", err)
	}
	return nil
}

// auditRequest sends one audit control message of type typ with payload
// and waits, within StatusTimeout, for the kernel's acknowledgement and,
// when reply is not nil, its answer of the same type (copied into reply).
func auditRequest(typ uint16, payload, reply []byte) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	tv := unix.NsecToTimeval(StatusTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	msg := make([]byte, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	copy(msg[unix.NLMSG_HDRLEN:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	acked, answered := false, reply == nil
	buf := make([]byte, ReadBufferBytes)
	for !acked || !answered {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return errors.New("short netlink error")
				}
				if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
					return unix.Errno(-errno)
				}
				acked = true
			case typ:
				copy(reply, m.Data)
				answered = true
			}
		}
	}
	return nil
}
