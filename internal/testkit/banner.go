package testkit

import (
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Greetings of services that speak first, as an internal NATS server or
// MariaDB greets whoever connects; each carries Marker, which must never
// come back to the one who pointed a consumer at them.
const Marker = "SECRET-7f3a9c"

var (
	NATSGreeting    = []byte(`INFO {"server_id":"` + Marker + `","server_name":"nats-internal","version":"2.10.14","proto":1,"host":"0.0.0.0","port":4222,"max_payload":1048576}` + "\r\n")
	MariaDBGreeting = mariaDBGreeting()
)

// mariaDBGreeting is a protocol-10 handshake packet: a 3-byte length and a
// sequence number, then 0x0a (a newline, where HTTP looks for one), the
// server's version with Marker in it, and binary fields.
func mariaDBGreeting() []byte {
	payload := []byte{0x0a}
	payload = append(payload, "5.5.5-11.4.2-MariaDB-"+Marker+"\x00"...)
	payload = append(payload, 0x2a, 0, 0, 0)                                // connection id
	payload = append(payload, "Zq&3@!bX\x00"...)                            // scramble, part 1
	payload = append(payload, 0xfe, 0xf7, 0x2d, 0x02, 0x00, 0xff, 0x81, 21) // capabilities, charset, status, more capabilities, scramble length
	payload = append(payload, make([]byte, 6)...)
	payload = append(payload, 0x1d, 0, 0, 0)
	payload = append(payload, "k9=Tn4$wQ1pL\x00mysql_native_password\x00"...)
	return append([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), 0}, payload...)
}

// Banner listens on 127.0.0.1 for a service that sends greeting to each
// connection and then reads until the client leaves (closing only then, so
// the client reads the greeting rather than a reset). It returns the
// listener's address, host:port.
func Banner(t testing.TB, greeting []byte) string {
	t.Helper()
	return Serve(t, func(c net.Conn) {
		c.Write(greeting)
		io.Copy(io.Discard, c)
	})
}

// Serve listens on 127.0.0.1 for a service that runs serve on each
// connection, closing it when serve returns. When the test ends it closes
// the listener and every connection still open, and waits for each serve
// to return. It returns the listener's address, host:port.
func Serve(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
		done  bool
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		done = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if done {
				c.Close()
			}
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	return ln.Addr().String()
}

// NoPeerBytes fails the test when the recorded error holds anything the
// other side sent: Marker, or the greeting's first line as Go would quote
// it.
func NoPeerBytes(t testing.TB, what, recorded string, greeting []byte) {
	t.Helper()
	first, _, _ := strings.Cut(string(greeting), "\n")
	quoted := strconv.Quote(first)
	if strings.Contains(recorded, Marker) || strings.Contains(recorded, quoted[1:len(quoted)-1]) {
		t.Errorf("%s: the recorded error %q carries the peer's bytes", what, recorded)
	}
}
