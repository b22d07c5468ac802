// Package faults is intake's network fault campaign (DESIGN.md §22): a
// toxiproxy proxy run in-process on one link (intake ↔ PostgreSQL, an HTTP
// consumer, a broker, object storage), the faults put on it, a sink that
// records what a consumer receives, and a checker that posts webhooks
// while a fault is on and after it is removed and counts what became of
// each. The end-to-end tests run it at a small size, and at full size
// with INTAKE_FAULTS_FULL=1.
package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Toxic is one toxiproxy toxic: its type, the stream it acts on
// ("upstream" is what intake sends, "downstream" what it is answered) and
// its attributes, as toxiproxy's API takes them.
type Toxic struct {
	Type       string
	Stream     string
	Attributes map[string]any
}

// Fault is a network fault: the toxics on a link while it lasts.
type Fault struct {
	Name   string
	Toxics []Toxic
}

// Latency is the latency fault's added delay, in milliseconds, each way
// the link answers.
const Latency = 200

// Network is the campaign's faults, "none" first: the baseline the others
// are read against.
var Network = []Fault{
	{Name: "none"},
	{Name: "latency 200ms", Toxics: []Toxic{{"latency", "downstream", map[string]any{"latency": Latency}}}},
	// A connection is reset as soon as intake sends on it, new ones too.
	{Name: "reset_peer", Toxics: []Toxic{{"reset_peer", "upstream", map[string]any{"timeout": 0}}}},
	// toxiproxy's timeout: everything dropped both ways, connections hang;
	// they are closed when the fault is removed.
	{Name: "timeout both ways", Toxics: []Toxic{
		{"timeout", "upstream", map[string]any{"timeout": 0}},
		{"timeout", "downstream", map[string]any{"timeout": 0}},
	}},
	// A partition: nothing gets through, nothing is reset; when it heals,
	// what was held arrives (as TCP's retransmits would bring it) and the
	// connections go on; one whose other end went away meanwhile is closed.
	{Name: "partition both ways", Toxics: []Toxic{held("upstream"), held("downstream")}},
	// One way: what intake sends arrives and is acted on, the answers are
	// held back.
	{Name: "partition one way (answers held)", Toxics: []Toxic{held("downstream")}},
	// The other way: what intake sends is held back, nothing is acted on.
	{Name: "partition one way (requests held)", Toxics: []Toxic{held("upstream")}},
	// A trickle: every write cut into bytes a millisecond apart, and the
	// link held to 4 KB/s.
	{Name: "slicer + bandwidth 4KB/s", Toxics: []Toxic{
		{"slicer", "downstream", map[string]any{"average_size": 1, "size_variation": 0, "delay": 1000}},
		{"bandwidth", "upstream", map[string]any{"rate": 4}},
		{"bandwidth", "downstream", map[string]any{"rate": 4}},
	}},
}

// held holds back what travels on stream until the fault is removed.
func held(stream string) Toxic { return Toxic{"hold", stream, map[string]any{}} }

// flushWait is how long a held chunk waits, once the partition heals, for
// the connection to take it: past it, the other end went away meanwhile.
const flushWait = time.Second

// HoldToxic is a partition on one stream: what travels on it, a close
// included, is held back until the toxic is removed, then let through in
// order, as TCP's retransmits bring it once a partition heals. A
// connection whose other end went away meanwhile is closed then. (A
// latency toxic an hour long would hold data too, but removing it from a
// connection whose end went away waits five seconds for each chunk it
// held, with every new connection through the proxy waiting behind.)
type HoldToxic struct{}

func init() { toxics.Register("hold", new(HoldToxic)) }

// Pipe holds every chunk until interrupted, then lets them through.
func (*HoldToxic) Pipe(stub *toxics.ToxicStub) {
	var held []*stream.StreamChunk
	input, ended := stub.Input, false
	for {
		select {
		case c := <-input:
			if c == nil { // the sender closed: held too
				input, ended = nil, true
				continue
			}
			held = append(held, c)
		case <-stub.Interrupt:
			for _, c := range held {
				select {
				case stub.Output <- c:
				case <-time.After(flushWait):
					stub.Close() // the connection is gone: nothing takes what was held
					return
				}
			}
			if ended {
				stub.Close()
			}
			return
		}
	}
}

// Cleanup is called as the toxic is removed; Pipe has let the held chunks
// through, or closed the connection (which ends the removal at once).
func (*HoldToxic) Cleanup(*toxics.ToxicStub) {}

// Find is the fault of Network named name.
func Find(name string) (Fault, bool) {
	for _, f := range Network {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}

// Proxy is one link through toxiproxy: intake connects to Addr, the proxy
// to the upstream, and a fault put on it acts on every connection, those
// open and those to come.
type Proxy struct {
	Addr string
	p    *toxiproxy.Proxy
}

// NewProxy starts a proxy on a free loopback port to upstream (host:port).
func NewProxy(name, upstream string) (*Proxy, error) {
	// Toxics log every interrupted pipe through zerolog's global logger,
	// at trace level, whatever logger the server is given; only toxiproxy
	// logs through zerolog here.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(server, name, "127.0.0.1:0", upstream)
	if err := server.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("faults: proxy to %s: %w", upstream, err)
	}
	return &Proxy{Addr: p.Listen, p: p}, nil
}

// ProxiedURL puts a proxy in front of the server rawURL names (its
// host:port, so the URL must name the port) and returns the URL with the
// proxy's address in its place, path, query and credentials as they were.
// The proxy closes when the test ends.
func ProxiedURL(t testing.TB, rawURL string) (string, *Proxy) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("faults: proxy to %q: %v", rawURL, err)
	}
	if u.Port() == "" {
		t.Fatalf("faults: proxy to %q: the URL names no port", rawURL)
	}
	p, err := NewProxy(u.Scheme, u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	u.Host = p.Addr
	return u.String(), p
}

// Apply puts f's toxics on the link.
func (p *Proxy) Apply(f Fault) error {
	for i, t := range f.Toxics {
		spec, err := json.Marshal(map[string]any{"name": fmt.Sprintf("%s-%d", t.Type, i), "type": t.Type,
			"stream": t.Stream, "toxicity": 1, "attributes": t.Attributes})
		if err != nil {
			return err
		}
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(string(spec))); err != nil {
			return fmt.Errorf("faults: %s: %w", f.Name, err)
		}
	}
	return nil
}

// Clear removes every toxic: the link is healthy again.
func (p *Proxy) Clear() { p.p.Toxics.ResetToxics(context.Background()) }

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() { p.p.Stop() }
