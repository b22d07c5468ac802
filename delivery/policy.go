package delivery

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
)

// Policy decides which addresses consumers and notification receivers may
// be reached at. It is checked when a URL is saved AND when each connection
// is made, so a name that later resolves elsewhere (DNS rebinding) cannot
// bypass it.
//
// An address is judged together with every IPv4 address it carries
// (IPv4-mapped, -compatible and -translated IPv6, NAT64, 6to4, Teredo), so
// a denied range is denied however it is written. Deny wins: an address is
// refused when it, or an address it carries, is in a Deny range; otherwise,
// when Allow has any range, it must be in one. The zero Policy refuses
// nothing.
type Policy struct {
	Deny  []netip.Prefix
	Allow []netip.Prefix // empty: every address not denied
}

// metadata are the cloud metadata services' addresses (AWS, GCP, Azure,
// Oracle, OpenStack; AWS over IPv6; Alibaba): the credentials of the host
// intake runs on. In every default Policy's Deny, so an operator's allow
// cannot reopen them.
var metadata = []netip.Prefix{
	netip.MustParsePrefix("169.254.169.254/32"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("100.100.100.200/32"),
}

// DefaultPolicy refuses the metadata addresses, link-local addresses and
// "this host" (0.0.0.0/8, ::); loopback and private ranges are allowed,
// since consumers are usually internal.
func DefaultPolicy() Policy {
	return Policy{Deny: append([]netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("::/128"),
	}, metadata...)}
}

// Tighten returns p with an operator's ranges added: deny refuses more,
// and allow (when given) limits what p did not refuse to those ranges.
func (p Policy) Tighten(deny, allow []netip.Prefix) Policy {
	return Policy{
		Deny:  append(append([]netip.Prefix(nil), p.Deny...), deny...),
		Allow: append(append([]netip.Prefix(nil), p.Allow...), allow...),
	}
}

// ParseRanges reads the values of a ranges flag (flag names it in the
// error): CIDRs, or addresses, each standing for itself alone.
func ParseRanges(flag string, values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%s %q: not a CIDR (e.g. 10.0.0.0/8, fd00::/8) nor an address", flag, v)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// refusal is a connection the policy refused; the sender records it by name.
type refusal struct {
	addr    netip.Addr
	carried netip.Addr // the carried IPv4 address that decided, if any
	why     string
}

func (r *refusal) Error() string {
	if !r.addr.IsValid() {
		return "refused by the consumer address policy" + r.why
	}
	if r.carried.IsValid() {
		return fmt.Sprintf("address %s is refused by the consumer address policy: it stands for %s%s", r.addr, r.carried, r.why)
	}
	return fmt.Sprintf("address %s is refused by the consumer address policy%s", r.addr, r.why)
}

// Allows reports whether ip may be connected to.
func (p Policy) Allows(ip netip.Addr) error {
	ip = ip.WithZone("").Unmap()
	carried := carriedIPv4(ip)
	for _, d := range p.Deny {
		if d.Contains(ip) {
			return &refusal{addr: ip}
		}
		for _, c := range carried {
			if d.Contains(c) {
				return &refusal{addr: ip, carried: c}
			}
		}
	}
	if len(p.Allow) == 0 || in(p.Allow, ip) {
		return nil
	}
	// An address that carries IPv4 addresses is reached through them: it
	// is allowed when all of them are.
	for _, c := range carried {
		if !in(p.Allow, c) {
			return &refusal{addr: ip, why: " (outside the allowed ranges)"}
		}
	}
	if len(carried) == 0 {
		return &refusal{addr: ip, why: " (outside the allowed ranges)"}
	}
	return nil
}

func in(ranges []netip.Prefix, a netip.Addr) bool {
	for _, r := range ranges {
		if r.Contains(a) {
			return true
		}
	}
	return false
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Dual = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215, local-use
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
	compat    = netip.MustParsePrefix("::/96")
	// IPv4-translated (RFC 2765's SIIT): ::ffff:0:a.b.c.d.
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// carriedIPv4 are the IPv4 addresses an IPv6 address (already unmapped)
// may deliver to. A local-use NAT64 prefix may embed the address at any
// of RFC 6052's lengths from /48 on, so each reading counts.
func carriedIPv4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(x, y, z, w byte) netip.Addr { return netip.AddrFrom4([4]byte{x, y, z, w}) }
	switch {
	case compat.Contains(a):
		// :: and ::1 are IPv6's own unspecified and loopback addresses.
		if binary.BigEndian.Uint32(b[12:]) <= 1 {
			return nil
		}
		return []netip.Addr{v4(b[12], b[13], b[14], b[15])}
	case nat64.Contains(a), translated.Contains(a):
		return []netip.Addr{v4(b[12], b[13], b[14], b[15])}
	case nat64Dual.Contains(a):
		return []netip.Addr{
			v4(b[6], b[7], b[9], b[10]),   // /48
			v4(b[7], b[9], b[10], b[11]),  // /56
			v4(b[9], b[10], b[11], b[12]), // /64
			v4(b[12], b[13], b[14], b[15]),
		}
	case sixToFour.Contains(a):
		return []netip.Addr{v4(b[2], b[3], b[4], b[5])}
	case teredo.Contains(a):
		// The client's address, stored inverted.
		return []netip.Addr{v4(^b[12], ^b[13], ^b[14], ^b[15])}
	}
	return nil
}

// CheckURL validates a consumer URL at registration: http or https (no
// credentials), or a scheme of brokers (its credentials in the URL, its
// kind's own rules), a host, and every address each host stands for or
// resolves to allowed. A host that is a number is an IPv4 address (as URL
// parsers and inet_aton read it), never a name for the resolver: it is
// judged as that address and must be written as one (dotted decimal).
func (p Policy) CheckURL(ctx context.Context, raw string, brokers Brokers) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("url must be an absolute URL: %s", strings.Join(brokers.Schemes(), ", "))
	}
	hosts := []string{u.Hostname()}
	switch scheme := strings.ToLower(u.Scheme); {
	case scheme == "http" || scheme == "https":
		if u.User != nil {
			return fmt.Errorf("url must not carry credentials")
		}
	case brokers.Names(raw):
		if err := brokers.Check(u); err != nil {
			return errors.New(intake.ErrorMessage(err))
		}
		hosts = hosts[:0]
		for _, hp := range strings.Split(u.Host, ",") { // a Kafka URL may name several brokers
			host, _, err := net.SplitHostPort(hp)
			if err != nil {
				host = strings.Trim(hp, "[]")
			}
			if host == "" {
				return fmt.Errorf("url %s names an empty host", redact.URL(raw))
			}
			hosts = append(hosts, host)
		}
	default:
		return fmt.Errorf("url scheme %q is not one intake delivers to: %s", u.Scheme, strings.Join(brokers.Schemes(), ", "))
	}
	for _, host := range hosts {
		if err := p.checkHost(ctx, host); err != nil {
			return err
		}
	}
	return nil
}

// checkHost refuses a host that is not ASCII, a number not written as a
// dotted-decimal address, or that stands for or resolves to an address
// the policy refuses.
func (p Policy) checkHost(ctx context.Context, host string) error {
	if host == "" {
		return fmt.Errorf("url must name a host")
	}
	for i := 0; i < len(host); i++ {
		// The HTTP client maps such names (full-width digits among them)
		// before it dials; the resolver here would not.
		if host[i] >= 0x80 {
			return fmt.Errorf("url host %q must be ASCII: write an international name in its xn-- form", host)
		}
	}
	if a, numeric, ok := ipv4Host(host); numeric {
		switch {
		case !ok:
			return fmt.Errorf("url host %q is not a valid IPv4 address", host)
		case a.String() != host:
			if err := p.Allows(a); err != nil {
				return fmt.Errorf("url host %q is %s: %w", host, a, err)
			}
			return fmt.Errorf("url host %q is the IPv4 address %s written another way: write it as %s", host, a, a)
		}
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("url host %q does not resolve", host)
	}
	for _, a := range addrs {
		if err := p.Allows(a); err != nil {
			return err
		}
	}
	return nil
}

// ipv4Host reads host as the URL standard (WHATWG) and inet_aton read an
// IPv4 host: numeric says that its last label is a number, which makes it
// an address rather than a name; ok that it is a valid one, a. Each of up
// to four parts is decimal, octal (leading 0) or hex (0x); the last fills
// the remaining bytes: 2852039166, 0251.0376.0251.0376, 0xa9.0xfe.43518.
func ipv4Host(host string) (a netip.Addr, numeric, ok bool) {
	if strings.Contains(host, ":") {
		return netip.Addr{}, false, false // IPv6
	}
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := parts[len(parts)-1]
	if _, err := ipv4Part(last); err != nil && strings.Trim(last, "0123456789") != "" || last == "" {
		return netip.Addr{}, false, false
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, false
	}
	var n uint64
	for i, s := range parts {
		v, err := ipv4Part(s)
		switch {
		case err != nil:
			return netip.Addr{}, true, false
		case i < len(parts)-1 && v > 255:
			return netip.Addr{}, true, false
		case i < len(parts)-1:
			n |= v << (8 * (3 - i))
		case v >= 1<<(8*(4-i)):
			return netip.Addr{}, true, false
		default:
			n |= v
		}
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	return netip.AddrFrom4(b), true, true
}

// ipv4Part reads one part of an IPv4 host.
func ipv4Part(s string) (uint64, error) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, nil // "0x" is zero
		}
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	for _, c := range []byte(s) {
		if strings.IndexByte("0123456789abcdef"[:base], c|0x20) < 0 {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseUint(s, base, 64)
}

// control refuses a connection to a denied address at the moment it is
// made, after resolution.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusal{why: fmt.Sprintf(": %q is not an address", address)}
	}
	return p.Allows(ap.Addr())
}

// Dialer dials through the policy: a host that is a number must be a
// dotted-decimal address, and every address connected to is checked as
// the connection is made.
func (p Policy) Dialer(timeout time.Duration) Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.control}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := numericHost(addr); err != nil {
			return nil, err
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &counted{Conn: c}, nil
	}
}

// numericHost refuses, before any resolver sees it, a host the dialer was
// given that is a number other than a dotted-decimal IPv4 address: Go's
// resolver would ask DNS for it, others would read it as an address.
func numericHost(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if a, numeric, ok := ipv4Host(host); numeric && (!ok || a.String() != host) {
		return &refusal{why: fmt.Sprintf(": host %q is a number, not written as an IPv4 address", host)}
	}
	return nil
}
