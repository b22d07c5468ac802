package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"
)

// seen is what a call got as far as, told by the HTTP client's trace hooks
// (they may run on the client's goroutines, even after the call returned).
type seen struct {
	answered  atomic.Bool // the first byte of an answer arrived
	tlsFailed atomic.Bool
	fresh     atomic.Pointer[counted] // the plain connection dialled for the call
}

// answeredAnything reports whether the other side sent bytes for this
// call: an answer, or, on a fresh plain connection, a greeting it sent
// before intake asked anything (which the HTTP client drops as
// "unsolicited" without reading it as an answer).
func (s *seen) answeredAnything() bool {
	c := s.fresh.Load()
	return s.answered.Load() || c != nil && c.read.Load() > 0
}

func (s *seen) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if c, ok := info.Conn.(*counted); ok && !info.Reused {
				s.fresh.Store(c)
			}
		},
		GotFirstResponseByte: func() { s.answered.Store(true) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				s.tlsFailed.Store(true)
			}
		},
	}
}

// describe names what failed in a call that got no HTTP answer, from a
// fixed set of names. Never the error's own text: net/http's quotes what
// the other side sent ("malformed HTTP response \"INFO {…}\""), and x509's
// names the peer's certificate, so a consumer URL pointed at an internal
// service would read that service's banner back from its delivery records.
func describe(err error, s *seen) string {
	var (
		ref *refusal
		rec tls.RecordHeaderError
	)
	if errors.As(err, &ref) {
		return "refused by the consumer address policy"
	}
	if name, ok := connFailure(err); ok {
		return name
	}
	switch {
	case s.tlsFailed.Load(), errors.As(err, &rec):
		return "TLS handshake failed"
	case s.answeredAnything():
		return "malformed HTTP answer"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed without an answer"
	}
	return "request failed"
}

// BrokerFailure names what failed in a call to a broker that the broker's
// client did not name in its protocol's terms (a status, an error code):
// the connection's failure as describe names it, else a malformed answer.
// Never the error's text, which quotes what the other side sent (Redis's
// "can't parse \"…\"", Kafka's first 4 bytes read as a size).
func BrokerFailure(err error) string {
	var (
		ref *refusal
		rec tls.RecordHeaderError
	)
	if errors.As(err, &ref) {
		return ref.Error() // intake's words, naming the address it refused
	}
	if name, ok := connFailure(err); ok {
		return name
	}
	switch {
	case errors.As(err, &rec):
		return "TLS handshake failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed without an answer"
	}
	return "malformed answer"
}

// connFailure names a failure of the connection itself: its dial, its
// name, its time, its TLS certificate.
func connFailure(err error) (string, bool) {
	var (
		dns   *net.DNSError
		errno syscall.Errno
		ne    net.Error
		unk   x509.UnknownAuthorityError
		host  x509.HostnameError
		inv   x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled", true
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout", true
	case errors.As(err, &dns) && dns.IsNotFound:
		return "host not found", true
	case errors.As(err, &dns):
		return "name resolution failed", true
	case errors.As(err, &errno) && errno == syscall.ECONNREFUSED:
		return "connection refused", true
	case errors.As(err, &errno) && (errno == syscall.ECONNRESET || errno == syscall.EPIPE || errno == syscall.ECONNABORTED):
		return "connection reset", true
	case errors.As(err, &errno) && errno == syscall.EHOSTUNREACH:
		return "host unreachable", true
	case errors.As(err, &errno) && errno == syscall.ENETUNREACH:
		return "network unreachable", true
	case errors.As(err, &unk):
		return "TLS certificate not trusted", true
	case errors.As(err, &host):
		return "TLS certificate not valid for the host", true
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return "TLS certificate expired", true
	case errors.As(err, &inv):
		return "TLS certificate invalid", true
	}
	return "", false
}

// counted is a connection that counts the bytes read from it.
type counted struct {
	net.Conn
	read atomic.Int64
}

// NetConn is the connection under the count (as tls.Conn names its own),
// for a client that reaches for the socket.
func (c *counted) NetConn() net.Conn { return c.Conn }

func (c *counted) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}
