package clientmeta

import (
	"net/netip"
	"syscall"
)

// refusedAddrError is a dial refused because its address is not public.
// Its text names the address and is never shown to a client (Fetch wraps
// it in a failure whose message names neither).
type refusedAddrError struct {
	address string
	class   string
}

func (e *refusedAddrError) Error() string {
	return "refused to dial " + e.address + ": " + e.class + " address"
}

// refuseNonPublic is the net.Dialer Control of a Fetcher without
// AllowPrivate: it runs on every address the dialer is about to connect to,
// after DNS resolution, and refuses one that is not public (addressClass).
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusedAddrError{address: address, class: "unparseable"}
	}
	if class := addressClass(ap.Addr()); class != "" {
		return &refusedAddrError{address: address, class: class}
	}
	return nil
}

// A rangeClass names an address range that is not public.
type rangeClass struct {
	prefix netip.Prefix
	class  string
}

// nonPublicV4 are the IPv4 ranges of the IANA special-purpose registry that
// are not globally reachable, plus multicast and the reserved 240/4.
var nonPublicV4 = []rangeClass{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
}

// IPv6: only global unicast (2000::/3) is public, less the ranges in
// nonPublicV6; NAT64 (64:ff9b::/96) is judged by the IPv4 address it
// embeds.
var (
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
	nat64           = netip.MustParsePrefix("64:ff9b::/96")
	nonPublicV6     = []rangeClass{
		{netip.MustParsePrefix("2001::/32"), "Teredo"},
		{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
		{netip.MustParsePrefix("2002::/16"), "6to4"},
		{netip.MustParsePrefix("3fff::/20"), "documentation"},
	}
	outsideGlobalV6 = []rangeClass{
		{netip.MustParsePrefix("::/128"), "unspecified"},
		{netip.MustParsePrefix("::1/128"), "loopback"},
		{netip.MustParsePrefix("fc00::/7"), "unique-local"},
		{netip.MustParsePrefix("fe80::/10"), "link-local"},
		{netip.MustParsePrefix("ff00::/8"), "multicast"},
	}
)

// addressClass returns "" when a is a public address, else the class that
// makes it non-public ("loopback", "private", …). An IPv4-mapped IPv6
// address is judged as its IPv4 address, and a zone is ignored.
func addressClass(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return "invalid"
	}
	if a.Is4() {
		return classIn(nonPublicV4, a)
	}
	if nat64.Contains(a) {
		b := a.As16()
		return addressClass(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if !globalUnicastV6.Contains(a) {
		if class := classIn(outsideGlobalV6, a); class != "" {
			return class
		}
		return "reserved"
	}
	return classIn(nonPublicV6, a)
}

func classIn(ranges []rangeClass, a netip.Addr) string {
	for _, r := range ranges {
		if r.prefix.Contains(a) {
			return r.class
		}
	}
	return ""
}
