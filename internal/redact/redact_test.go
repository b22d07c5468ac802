package redact

import (
	"net/http"
	"testing"
)

func TestCredentialsAreHiddenAndEverythingElseKept(t *testing.T) {
	h := Headers(http.Header{"Authorization": {"Bearer x"}, "Cookie": {"a=b"}, "X-Api-Key": {"k"},
		"X-Hub-Signature-256": {"sha256=ab"}, "Content-Type": {"application/json"}, "X-Okta-Verification-Challenge": {"c"}})
	if len(h) != 3 || h.Get("X-Hub-Signature-256") == "" || h.Get("Content-Type") == "" || h.Get("X-Okta-Verification-Challenge") == "" {
		t.Fatalf("headers %v", h)
	}
	if got := Query("a=1&hub.verify_token=s3cret&api_key=k&b=%20x&access%5Ftoken=t"); got != "a=1&b=%20x" {
		t.Fatalf("query %q", got)
	}
}

func TestAHeaderNamedAsACredentialIsHiddenWhateverItsName(t *testing.T) {
	h := http.Header{"X-Okta-Shared": {"s3cret"}, "X-Request-Id": {"r1"}}
	if got := Headers(h, "x-okta-shared"); len(got) != 1 || got.Get("X-Request-Id") != "r1" {
		t.Fatalf("headers %v: want the named credential hidden, the rest kept", got)
	}
	if !Credential("X-OKTA-SHARED", "X-Okta-Shared") || Credential("X-Okta-Shared") {
		t.Fatal("a named credential is matched without case, and only when named")
	}
}
