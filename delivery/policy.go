package delivery

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// Policy decides which addresses consumers may be reached at. It is checked
// when a consumer registers AND when each connection is made, so a name
// that later resolves elsewhere (DNS rebinding) cannot bypass it.
type Policy struct {
	Deny []netip.Prefix
}

// DefaultPolicy refuses link-local and cloud metadata addresses; loopback
// and private ranges are allowed, since consumers are usually internal.
func DefaultPolicy() Policy {
	return Policy{Deny: []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("fd00:ec2::254/128"),
		netip.MustParsePrefix("0.0.0.0/8"),
	}}
}

// Allows reports whether ip may be connected to.
func (p Policy) Allows(ip netip.Addr) error {
	ip = ip.Unmap()
	for _, d := range p.Deny {
		if d.Contains(ip) {
			return fmt.Errorf("address %s is refused by the consumer address policy", ip)
		}
	}
	return nil
}

// CheckURL validates a consumer URL at registration: http or https, a host,
// and every address the host resolves to allowed.
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("url must be an absolute http or https URL")
	}
	if u.User != nil {
		return fmt.Errorf("url must not carry credentials")
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return fmt.Errorf("url host %q does not resolve", u.Hostname())
	}
	for _, a := range addrs {
		if err := p.Allows(a); err != nil {
			return err
		}
	}
	return nil
}

// control refuses a connection to a denied address at the moment it is
// made, after resolution.
func (p Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	return p.Allows(ap.Addr())
}
