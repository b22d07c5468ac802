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

// newMixer cycles over routes; each sample is a new provider event, as
// fixtures.Build makes it, and its id is read with the provider's adapter,
// as the worker will read it.
func newMixer(routes []mixRoute) mixer {
	adapters := make([]provider.Adapter, len(routes))
	for i, r := range routes {
		adapters[i], _ = provider.Lookup(r.provider)
	}
	return func(n int64, base string) (string, http.Header, []byte, string, error) {
		i := int(n % int64(len(routes)))
		r := routes[i]
		url := base + r.path
		s, err := fixtures.Build(r.provider, fixtures.Options{Secret: r.secret, URL: url, Now: time.Now()})
		if err != nil {
			return "", nil, nil, "", err
		}
		in, err := adapters[i].Interpret(&provider.Request{Method: s.Method, URL: url, Header: s.Header, Body: s.Body, ReceivedAt: time.Now()}, provider.Config{})
		if err != nil || len(in.Events) != 1 || in.Events[0].ProviderEventID == "" {
			return "", nil, nil, "", fmt.Errorf("%s sample: want one event with a provider event id, got %+v (%v)", r.provider, in, err)
		}
		return url, s.Header, s.Body, in.Events[0].ProviderEventID, nil
	}
}

// mixTypes are the event types the mix's samples have, for the consumer.
func mixTypes() []string {
	out := make([]string, len(mixProviders))
	for i, p := range mixProviders {
		out[i] = p + "." + fixtures.DefaultType(p)
	}
	return out
}
