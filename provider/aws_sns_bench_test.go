package provider

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// BenchmarkAWSSNSVerifyFetched is what verifying a notification costs once
// its signing certificate has been fetched: the work of each message after
// the first (go test -run '^$' -bench AWSSNSVerifyFetched ./provider).
func BenchmarkAWSSNSVerifyFetched(b *testing.B) {
	p := pki(b)
	const path = "/SimpleNotificationService-bench.pem"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(p.leafPEM))
	}))
	defer srv.Close()
	to, _ := url.Parse(srv.URL)
	snsTransport, snsRoots = rewrite{to: to, next: http.DefaultTransport, l: &snsLoopback{}}, p.roots
	defer func() { snsTransport, snsRoots = nil, nil }()
	m := snsNote("2")
	m["SigningCertURL"] = "https://sns.us-west-2.amazonaws.com" + path
	r := snsRequest(b, p.key, m)
	a := adapter(b, "aws_sns")
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Verify(r, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
