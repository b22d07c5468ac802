package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/intakehq/intake/provider"
	"github.com/intakehq/intake/provider/fixtures"
)

// mixProviders are the providers --provider mix cycles over: ten common
// ones whose samples carry a provider event id (the consumer's deliveries
// are matched on it) and sign no URL (the bench posts to whichever server
// it round-robins to).
var mixProviders = []string{"github", "stripe", "shopify", "slack", "standard", "linear", "paddle", "intercom", "pagerduty", "twitch"}

// mixRoute is one provider of the mix: its connection's secret and the
// path of its endpoint.
type mixRoute struct {
	provider, secret, path string
}

// mixSecret is a fresh secret of the form the provider issues.
func mixSecret(name string) string {
	if name == "standard" {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte(rand.Text()))
	}
	return rand.Text()
}

// mixer makes webhook n of a provider mix: a fresh signed sample of the
// next provider in turn, posted to base, and the provider event id its
// delivery will carry.
type mixer func(n int64, base string) (url string, h http.Header, body []byte, id string, err error)

// mixSample is one webhook of the mix, made before it is sent.
type mixSample struct {
	h    http.Header
	body []byte
	id   string
}

// newMixer cycles over routes; each sample is a new provider event, as
// fixtures.Build makes it, and its id is read with the provider's adapter,
// as the worker will read it. The first ahead samples are made here,
// before the load starts, so that the bench's clients spend no more on a
// mixed webhook than on a GitHub one (signing a body of that size): a
// sample costs 10–40 µs to build and read, on the cores the server
// measured runs on. Past them, each is made as it is sent. So are all of
// a provider's whose signatures expire within span (the run's length and
// more: Paddle's tolerance is 5 s), found by trying a sample signed span
// ago with the adapter.
func newMixer(routes []mixRoute, ahead int, span time.Duration, now func() time.Time) (mixer, error) {
	adapters := make([]provider.Adapter, len(routes))
	asSent := make([]bool, len(routes))
	for i, r := range routes {
		adapters[i], _ = provider.Lookup(r.provider)
		url := "http://intake.invalid" + r.path
		s, err := fixtures.Build(r.provider, fixtures.Options{Secret: r.secret, URL: url, Now: now().Add(-span)})
		if err != nil {
			return nil, err
		}
		req := &provider.Request{Method: s.Method, URL: url, Header: s.Header, Body: s.Body, ReceivedAt: now()}
		asSent[i] = adapters[i].Verify(req, [][]byte{[]byte(r.secret)}, provider.Config{}) != nil
	}
	build := func(n int64) (mixSample, error) {
		i := int(n % int64(len(routes)))
		r := routes[i]
		// No provider of the mix signs its URL: the sample is signed for
		// the endpoint's path and posted to whichever server serves it.
		url := "http://intake.invalid" + r.path
		s, err := fixtures.Build(r.provider, fixtures.Options{Secret: r.secret, URL: url, Now: now()})
		if err != nil {
			return mixSample{}, err
		}
		in, err := adapters[i].Interpret(&provider.Request{Method: s.Method, URL: url, Header: s.Header, Body: s.Body, ReceivedAt: now()}, provider.Config{})
		if err != nil || len(in.Events) != 1 || in.Events[0].ProviderEventID == "" {
			return mixSample{}, fmt.Errorf("%s sample: want one event with a provider event id, got %+v (%v)", r.provider, in, err)
		}
		return mixSample{h: s.Header, body: s.Body, id: in.Events[0].ProviderEventID}, nil
	}
	made := make([]mixSample, ahead)
	for n := range made {
		if asSent[n%len(routes)] {
			continue
		}
		s, err := build(int64(n))
		if err != nil {
			return nil, err
		}
		made[n] = s
	}
	return func(n int64, base string) (string, http.Header, []byte, string, error) {
		i := int(n % int64(len(routes)))
		url := base + routes[i].path
		if n < int64(len(made)) && !asSent[i] {
			s := made[n]
			made[n] = mixSample{} // sent once; let it go
			return url, s.h, s.body, s.id, nil
		}
		s, err := build(n)
		return url, s.h, s.body, s.id, err
	}, nil
}

// mixAhead is how many samples a mix run makes before its load: enough
// for the whole run at a steady rate, or at 4 000 webhooks a second in
// closed loop (more than this machine's server acknowledges), at most
// 200 000 (about 150 MiB).
func mixAhead(l load) int {
	rate := l.Rate
	if rate <= 0 {
		rate = 4000
	}
	return min(int(rate*l.Duration.Seconds()*1.1)+l.Clients, 200_000)
}

// mixTypes are the event types the mix's samples have, for the consumer.
func mixTypes() []string {
	out := make([]string, len(mixProviders))
	for i, p := range mixProviders {
		out[i] = p + "." + fixtures.DefaultType(p)
	}
	return out
}

// mixSpan is how long a sample made ahead may wait to be received: the
// run, the time taken to make its samples, and a margin. (Signatures are
// judged against the time a webhook was received, so a backlog behind
// the acknowledgement does not count.)
func mixSpan(d time.Duration) time.Duration { return d + time.Minute }
