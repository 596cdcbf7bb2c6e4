package clientmeta

import (
	"errors"
	"net/netip"
	"testing"
)

// TestAddressClass: each non-public range is refused with its class, and
// public addresses (including NAT64 of a public IPv4 address) are not.
func TestAddressClass(t *testing.T) {
	for _, c := range []struct{ addr, class string }{
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"100.127.255.254", "shared (CGNAT)"},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"169.254.169.254", "link-local"}, // cloud metadata
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.0.0.8", "reserved"},
		{"192.0.2.1", "documentation"},
		{"192.88.99.1", "reserved"},
		{"192.168.1.1", "private"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.51.100.1", "documentation"},
		{"203.0.113.1", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.1.2.3", "private"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::127.0.0.1", "reserved"}, // IPv4-compatible (deprecated)
		{"fc00::1", "unique-local"},
		{"fd12:3456::1", "unique-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "reserved"}, // site-local (deprecated)
		{"ff02::1", "multicast"},
		{"100::1", "reserved"}, // discard-only
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b::a00:1", "private"},
		{"64:ff9b:1::a00:1", "reserved"}, // local-use NAT64
		{"2001::1", "Teredo"},
		{"2001:db8::1", "documentation"},
		{"2002:a00:1::1", "6to4"},
		{"3fff::1", "documentation"},
		// Public.
		{"1.1.1.1", ""},
		{"8.8.8.8", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.169.0.1", ""},
		{"223.255.255.255", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2606:4700::1111", ""},
		{"2a00:1450:4001::1", ""},
	} {
		if got := addressClass(netip.MustParseAddr(c.addr)); got != c.class {
			t.Errorf("addressClass(%s) = %q, want %q", c.addr, got, c.class)
		}
	}
	if got := addressClass(netip.Addr{}); got != "invalid" {
		t.Errorf("addressClass(zero) = %q", got)
	}
}

// TestRefuseNonPublic: the dial guard refuses a non-public dialed address
// and lets a public one through.
func TestRefuseNonPublic(t *testing.T) {
	for _, c := range []struct {
		address string
		refused bool
	}{
		{"127.0.0.1:443", true},
		{"[::1]:443", true},
		{"[::ffff:192.168.0.1]:443", true},
		{"[fe80::1%eth0]:443", true},
		{"10.0.0.1:8443", true},
		{"not-an-address", true},
		{"93.184.215.14:443", false},
		{"[2606:4700::1111]:443", false},
	} {
		err := refuseNonPublic("tcp", c.address, nil)
		var refused *refusedAddrError
		if errors.As(err, &refused) != c.refused || (err != nil) != c.refused {
			t.Errorf("refuseNonPublic(%s) = %v, want refused %v", c.address, err, c.refused)
		}
	}
}
