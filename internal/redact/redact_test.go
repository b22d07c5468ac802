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

func TestURLShowsEveryCredentialAsStarsAndKeepsTheRest(t *testing.T) {
	for raw, want := range map[string]string{
		"nats://TOKEN-9f2@h:4222/orders":                      "nats://***@h:4222/orders",
		"redis://admin:pw@h:6379/0?stream=s":                  "redis://***:***@h:6379/0?stream=s",
		"redis://:pw@h:6379/0?stream=s":                       "redis://:***@h:6379/0?stream=s",
		"kafka://u:p@w@h1:9092,h2:9092/t?sasl=plain":          "kafka://***:***@h1:9092,h2:9092/t?sasl=plain",
		"https://h/hook?api_key=k1&v=2":                       "https://h/hook?api_key=***&v=2",
		"https://h/hook?access_token=a&token=b&secret=c#frag": "https://h/hook?access_token=***&token=***&secret=***#frag",
		"https://h/hook?password=p&key=k&signature=s&sig=x":   "https://h/hook?password=***&key=***&signature=***&sig=***",
		"https://h/api?X-Amz-Credential=c&X-Amz-Signature=s":  "https://h/api?X-Amz-Credential=***&X-Amz-Signature=***",
		"https://h/api/fn?code=azure-function-key":            "https://h/api/fn?code=***",
		"https://h/hook?api%5Fkey=k":                          "https://h/hook?api%5Fkey=***",
		"amqp://h/?exchange=x&routing_key=orders.created":     "amqp://h/?exchange=x&routing_key=orders.created",
		"https://h/x?page=2":                                  "https://h/x?page=2",
		"https://h/x":                                         "https://h/x",
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%s) = %s, want %s", raw, got, want)
		}
	}
}
