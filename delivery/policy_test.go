package delivery

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// deniedForms are the metadata service, link-local and "this host"
// addresses written every way a URL can write them.
var deniedForms = []string{
	"http://169.254.169.254/",
	"http://[::ffff:169.254.169.254]/",
	"http://[::ffff:a9fe:a9fe]/",
	"http://[::a9fe:a9fe]/",                           // IPv4-compatible
	"http://[::169.254.169.254]/",                     // the same, dotted
	"http://[::ffff:0:a9fe:a9fe]/",                    // IPv4-translated (RFC 2765)
	"http://[::ffff:0:169.254.169.254]/",              // the same, dotted
	"http://[::ffff:0:100.100.100.200]/",              // Alibaba's metadata, translated
	"http://[64:ff9b::a9fe:a9fe]/",                    // NAT64
	"http://[64:ff9b::169.254.169.254]/",              // the same, dotted
	"http://[64:ff9b:1::a9fe:a9fe]/",                  // local-use NAT64, /96
	"http://[64:ff9b:1:0:a9:fea9:fe00:0]/",            // local-use NAT64, /64
	"http://[2002:a9fe:a9fe::]/",                      // 6to4
	"http://[2002:a9fe:a9fe:1::5]/",                   // 6to4, a host behind it
	"http://[2001:0:4136:e378:8000:63bf:5601:5601]/",  // Teredo: the client's address inverted
	"http://2852039166/",                              // decimal
	"http://0251.0376.0251.0376/",                     // octal
	"http://0xa9.0xfe.0xa9.0xfe/",                     // hex
	"http://0xA9FEA9FE/",                              // one hex number
	"http://0251.254.0xa9.254/",                       // mixed
	"http://169.254.43518/",                           // the last part fills 16 bits
	"http://169.16689662/",                            // and 24
	"http://169.254.169.254./",                        // a trailing dot
	"http://100.100.100.200/",                         // Alibaba's metadata
	"http://[::ffff:100.100.100.200]/",                // and mapped
	"http://1684301000/",                              // and decimal
	"http://[fd00:ec2::254]/",                         // AWS over IPv6
	"http://[fe80::1%25lo]/",                          // link-local with a zone
	"http://169.254.1.1/",                             // link-local
	"http://0.0.0.0/",                                 // this host
	"http://0/",                                       // and decimal
	"http://[::]/",                                    // and IPv6's
	"http://[::ffff:0.0.0.0]/",                        // and mapped
	"http://%EF%BC%91%EF%BC%96%EF%BC%99.254.169.254/", // full-width digits, which the HTTP client maps to ASCII
}

// allowedForms stay reachable under the default policy: loopback, private
// and public addresses, however they are written as addresses.
var allowedForms = []string{
	"http://127.0.0.1:3000/hooks",
	"http://[::1]/",
	"https://localhost/hooks",
	"http://10.1.2.3/x",
	"http://192.168.1.10/",
	"http://100.64.0.1/", // shared address space, other than Alibaba's metadata
	"http://8.8.8.8/",
	"http://[::ffff:10.1.2.3]/",
	"http://[64:ff9b::808:808]/", // NAT64 of 8.8.8.8
	"http://[2002:808:808::1]/",  // 6to4 through 8.8.8.8
	"http://[2001:db8::1]/",
}

func TestPolicyRefusesDeniedAddressesInEveryWrittenFormAtRegistrationAndAtConnect(t *testing.T) {
	p := DefaultPolicy()
	ctx := context.Background()
	for _, u := range deniedForms {
		err := p.CheckURL(ctx, u, nil)
		if err == nil {
			t.Errorf("registration: %s accepted", u)
			continue
		}
		if !strings.Contains(err.Error(), "refused by the consumer address policy") && !strings.Contains(err.Error(), "must be ASCII") {
			t.Errorf("registration: %s refused for another reason: %v", u, err)
		}
	}
	for _, u := range allowedForms {
		if err := p.CheckURL(ctx, u, nil); err != nil {
			t.Errorf("registration: %s refused: %v", u, err)
		}
	}
	// At connect time: the dialer refuses whatever the URL said before,
	// without a resolver reading a numeric host its own way.
	s := NewSender(Options{Policy: p, Timeout: 2 * time.Second})
	for _, u := range deniedForms {
		r := send(ctx, s, u, NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
		if r.Outcome != intake.DeliveryRetry || r.Err != "refused by the consumer address policy" {
			t.Errorf("connect: %s: %+v", u, r)
		}
	}
}

func TestPolicyReadsEveryIPv6FormAsTheIPv4AddressItCarries(t *testing.T) {
	for form, want := range map[string]string{
		"::a9fe:a9fe":                          "169.254.169.254",
		"::ffff:0:a9fe:a9fe":                   "169.254.169.254",
		"64:ff9b::a9fe:a9fe":                   "169.254.169.254",
		"2002:a9fe:a9fe::":                     "169.254.169.254",
		"2001:0:4136:e378:8000:63bf:5601:5601": "169.254.169.254",
		"::1":                                  "",
		"2001:db8::1":                          "",
	} {
		got := carriedIPv4(netip.MustParseAddr(form))
		if want == "" {
			if len(got) != 0 {
				t.Errorf("%s carries %v", form, got)
			}
			continue
		}
		if len(got) != 1 || got[0].String() != want {
			t.Errorf("%s carries %v, want %s", form, got, want)
		}
	}
}

func TestPolicyRefusesANumericHostNotWrittenAsAnAddress(t *testing.T) {
	p := DefaultPolicy()
	for u, want := range map[string]string{
		"http://2130706433/":    `"2130706433" is the IPv4 address 127.0.0.1 written another way: write it as 127.0.0.1`,
		"http://0x7f.1:3000/":   "write it as 127.0.0.1",
		"http://127.0.0.1./":    "write it as 127.0.0.1",
		"http://1.2.3.4.5/":     `url host "1.2.3.4.5" is not a valid IPv4 address`,
		"http://256.1.1.1/":     "not a valid IPv4 address",
		"http://hooks.123/":     "not a valid IPv4 address",
		"http://4294967296/":    "not a valid IPv4 address",
		"http://0x1.0x2.09.1/":  "not a valid IPv4 address",
		"http://2852039166/":    `url host "2852039166" is 169.254.169.254: address 169.254.169.254 is refused by the consumer address policy`,
		"http://[::a9fe:a9fe]/": "address ::a9fe:a9fe is refused by the consumer address policy: it stands for 169.254.169.254",
	} {
		err := p.CheckURL(context.Background(), u, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", u, err, want)
		}
	}
	// A numeric host saved before it was refused is not dialled either.
	var called atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called.Store(true) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	r := send(context.Background(), NewSender(Options{}), "http://2130706433"+port+"/", NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
	if r.Err != "refused by the consumer address policy" || called.Load() {
		t.Fatalf("a numeric host was dialled: %+v, called %v", r, called.Load())
	}
}

func TestOperatorRangesDenyAndAllowButNeverReopenMetadata(t *testing.T) {
	ctx := context.Background()
	ranges := func(flag string, vs ...string) []netip.Prefix {
		ps, err := ParseRanges(flag, vs)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	if _, err := ParseRanges("--consumer-deny", []string{"10.0.0.0/33"}); err == nil || !strings.Contains(err.Error(), `--consumer-deny "10.0.0.0/33": not a CIDR`) {
		t.Fatalf("a malformed range: %v", err)
	}
	private := DefaultPolicy().Tighten(ranges("--consumer-deny", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"), nil)
	for u, ok := range map[string]bool{
		"http://10.1.2.3/":           false,
		"http://[::ffff:10.1.2.3]/":  false,
		"http://[64:ff9b::a01:203]/": false, // 10.1.2.3 through NAT64
		"http://[::ffff:0:a01:203]/": false, // 10.1.2.3 translated
		"http://012.1.2.3/":          false, // 10.1.2.3 in octal
		"http://192.168.0.9/":        false,
		"http://[fd12::1]/":          false,
		"http://127.0.0.1/":          true,
		"http://8.8.8.8/":            true,
	} {
		if err := private.CheckURL(ctx, u, nil); (err == nil) != ok {
			t.Errorf("deny private ranges: %s: %v", u, err)
		}
	}
	only := DefaultPolicy().Tighten(nil, ranges("--consumer-allow", "10.1.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "fd00::/8"))
	for u, ok := range map[string]bool{
		"http://10.1.2.3/":           true,
		"http://[::ffff:10.1.2.3]/":  true,
		"http://[64:ff9b::a01:203]/": true,
		"http://[::ffff:0:a01:203]/": true,
		"http://[::ffff:0:a02:1]/":   false, // 10.2.0.1 translated
		"http://10.2.0.1/":           false,
		"http://127.0.0.1/":          false,
		"http://8.8.8.8/":            false,
		"http://100.64.0.1/":         true,
		"http://100.100.100.200/":    false, // metadata, though allowed ranges cover it
		"http://169.254.169.254/":    false,
		"http://169.254.1.1/":        false, // an allow does not reopen a default denial
		"http://[fd00:ec2::254]/":    false,
		"http://[fd00::1]/":          true,
	} {
		if err := only.CheckURL(ctx, u, nil); (err == nil) != ok {
			t.Errorf("allow-list: %s: %v", u, err)
		}
	}

	// At connect time, with a real listener on 127.0.0.1: a name that
	// resolves to a denied address (localhost) and the address itself are
	// refused, an allowed one is called.
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	send := func(p Policy, u string) Result {
		return send(ctx, NewSender(Options{Policy: p, Timeout: 2 * time.Second}), u, NewSecret(), intake.NewEnvelope(&intake.Event{ID: "e"}), time.Now())
	}
	loopback := DefaultPolicy().Tighten(ranges("--consumer-deny", "127.0.0.0/8", "::1"), nil)
	for _, u := range []string{srv.URL, "http://localhost" + port, "http://[::ffff:127.0.0.1]" + port} {
		if r := send(loopback, u); r.Err != "refused by the consumer address policy" {
			t.Errorf("denied %s: %+v", u, r)
		}
	}
	if r := send(only, srv.URL); r.Err != "refused by the consumer address policy" {
		t.Errorf("outside the allowed ranges: %+v", r)
	}
	if calls.Load() != 0 {
		t.Fatalf("a refused address was called %d times", calls.Load())
	}
	if r := send(DefaultPolicy().Tighten(nil, ranges("--consumer-allow", "127.0.0.1")), srv.URL); r.Outcome != intake.DeliveryHandled || calls.Load() != 1 {
		t.Fatalf("an allowed address: %+v", r)
	}
}

// metadataForms are the metadata services' addresses, each written in
// every form the policy reads an IPv4 address from, with the address it
// carries.
var metadataForms = map[string]string{
	"169.254.169.254":                      "169.254.169.254",
	"::ffff:a9fe:a9fe":                     "169.254.169.254", // IPv4-mapped
	"::a9fe:a9fe":                          "169.254.169.254", // IPv4-compatible
	"::ffff:0:a9fe:a9fe":                   "169.254.169.254", // IPv4-translated
	"64:ff9b::a9fe:a9fe":                   "169.254.169.254", // NAT64
	"64:ff9b:1:a9fe:a9:fe00::":             "169.254.169.254", // local-use NAT64, /48
	"64:ff9b:1:a9:fe:a9fe::":               "169.254.169.254", // /56
	"64:ff9b:1:0:a9:fea9:fe00:0":           "169.254.169.254", // /64
	"64:ff9b:1::a9fe:a9fe":                 "169.254.169.254", // /96
	"2002:a9fe:a9fe::":                     "169.254.169.254", // 6to4
	"2001:0:4136:e378:8000:63bf:5601:5601": "169.254.169.254", // Teredo
	"100.100.100.200":                      "100.100.100.200",
	"::ffff:6464:64c8":                     "100.100.100.200",
	"::6464:64c8":                          "100.100.100.200",
	"::ffff:0:6464:64c8":                   "100.100.100.200",
	"64:ff9b::6464:64c8":                   "100.100.100.200",
	"64:ff9b:1:6464:64:c800::":             "100.100.100.200",
	"64:ff9b:1:64:64:64c8::":               "100.100.100.200",
	"64:ff9b:1:0:64:6464:c800:0":           "100.100.100.200",
	"64:ff9b:1::6464:64c8":                 "100.100.100.200",
	"2002:6464:64c8::":                     "100.100.100.200",
	"2001:0:4136:e378:8000:63bf:9b9b:9b37": "100.100.100.200",
	"fd00:ec2::254":                        "fd00:ec2::254",
}

// Each form is refused for the very metadata address it carries. The
// policy here denies those addresses alone: under the default one, a form
// misread as another link-local or "this host" address would still be
// refused, for the wrong reason, and the misreading would go unseen.
func TestPolicyFindsTheMetadataAddressInEveryFormItIsWritten(t *testing.T) {
	p := Policy{Deny: metadata}
	for form, want := range metadataForms {
		var ref *refusal
		if err := p.Allows(netip.MustParseAddr(form)); !errors.As(err, &ref) {
			t.Errorf("%s is allowed: want it refused as %s", form, want)
			continue
		}
		got := ref.addr
		if ref.carried.IsValid() {
			got = ref.carried
		}
		if got.String() != want {
			t.Errorf("%s is refused as %s, want as %s", form, got, want)
		}
	}
}

// DESIGN §18: an operator's allow never reopens the metadata addresses,
// in any form, not even an allow that covers them or the prefix they are
// written in.
func TestAnAllowNeverReopensTheMetadataAddressesInAnyForm(t *testing.T) {
	for _, allow := range [][]string{
		{"169.254.0.0/16", "100.64.0.0/10", "fd00::/8"},
		{"0.0.0.0/0", "::/0"},
		{"::ffff:0:0/96", "::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32"},
	} {
		ranges, err := ParseRanges("--consumer-allow", allow)
		if err != nil {
			t.Fatal(err)
		}
		p := DefaultPolicy().Tighten(nil, ranges)
		for form := range metadataForms {
			u := "http://" + form + "/"
			if strings.Contains(form, ":") {
				u = "http://[" + form + "]/"
			}
			err := p.CheckURL(context.Background(), u, nil)
			if err == nil || !strings.Contains(err.Error(), "refused by the consumer address policy") || strings.Contains(err.Error(), "outside the allowed ranges") {
				t.Errorf("allow %v: %s: %v, want it refused as denied", allow, u, err)
			}
		}
	}
}
