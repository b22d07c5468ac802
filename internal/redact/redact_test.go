package redact

import (
	"net/http"
	"net/url"
	"testing"
)

// The one list, read as a table: what each name is in a header and in a
// query or url. Where the copies it replaced disagreed, the list hides
// (api_key's url words hide a query parameter too); a signature is the one
// name a header keeps.
func TestTheOneListJudgesHeadersAndParametersAlike(t *testing.T) {
	for _, c := range []struct {
		name          string
		header, param bool
	}{
		{"Authorization", true, true},
		{"Proxy-Authorization", true, true},
		{"Cookie", true, true},
		{"Set-Cookie", true, true},
		{"X-Api-Key", true, true},
		{"X-Goog-Channel-Token", true, true},
		{"hub.verify_token", true, true},
		{"access_token", true, true},
		{"api_key", true, true},
		{"apikey", true, true},
		{"client_secret", true, true},
		{"password", true, true},
		{"passwd", true, true},
		{"pass", true, true},
		{"pwd", true, true},
		{"key", true, true},
		{"session_id", true, true},
		{"X-Amz-Credential", true, true},
		{"aws_access_key_id", true, true},
		{"AccessKey", true, true},
		{"private_key", true, true},
		{"privatekey", true, true},
		{"client_key", true, true},
		{"code", true, true},
		{"X-Signature-Token", true, true},
		{"X-Hub-Signature-256", false, true},
		{"Stripe-Signature", false, true},
		{"X-Amz-Signature", false, true},
		{"sig", false, true},
		{"Content-Type", false, false},
		{"User-Agent", false, false},
		{"X-Okta-Verification-Challenge", false, false},
		{"Idempotency-Key", false, false},
		{"routing_key", false, false},
		{"stream", false, false},
		{"page", false, false},
		{"codes", false, false},
		{"passage", false, false},
	} {
		if got := Header(c.name); got != c.header {
			t.Errorf("Header(%q) = %v, want %v", c.name, got, c.header)
		}
		if got := Param(c.name); got != c.param {
			t.Errorf("Param(%q) = %v, want %v", c.name, got, c.param)
		}
	}
}

// A config setting is a credential when its name holds a word for a
// secret value or ends in key; one that names where a credential travels,
// or asks for a signature, is not.
func TestASettingIsACredentialWhenItsNameSaysItHoldsOne(t *testing.T) {
	for name, want := range map[string]bool{
		"verify_token": true, "Client_Secret": true, "password": true, "credentials": true,
		"signing_key": true, "APIKey": true, "key": true,
		"auth_header": false, "require_signature": false, "public_keys": false, "header": false,
		"tolerance": false, "script": false, "query_param": false, "service_account": false,
	} {
		if got := Setting(name); got != want {
			t.Errorf("Setting(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCredentialsAreHiddenAndEverythingElseKept(t *testing.T) {
	h := Headers(http.Header{"Authorization": {"Bearer x"}, "Cookie": {"a=b"}, "X-Api-Key": {"k"},
		"X-Hub-Signature-256": {"sha256=ab"}, "Content-Type": {"application/json"}, "X-Okta-Verification-Challenge": {"c"}})
	if len(h) != 3 || h.Get("X-Hub-Signature-256") == "" || h.Get("Content-Type") == "" || h.Get("X-Okta-Verification-Challenge") == "" {
		t.Fatalf("headers %v", h)
	}
	if got := Query("a=1&hub.verify_token=s3cret&api_key=k&b=%20x&access%5Ftoken=t"); got != "a=1&b=%20x" {
		t.Fatalf("query %q", got)
	}
	// A query is judged as a url's is: a signature signs the url.
	if got := Query("a=1&sig=s&X-Amz-Signature=s&code=c&pwd=p&b=2"); got != "a=1&b=2" {
		t.Fatalf("query %q", got)
	}
}

func TestAHeaderNamedAsACredentialIsHiddenWhateverItsName(t *testing.T) {
	h := http.Header{"X-Okta-Shared": {"s3cret"}, "X-Request-Id": {"r1"}}
	if got := Headers(h, "x-okta-shared"); len(got) != 1 || got.Get("X-Request-Id") != "r1" {
		t.Fatalf("headers %v: want the named credential hidden, the rest kept", got)
	}
	if !Header("X-OKTA-SHARED", "X-Okta-Shared") || Header("X-Okta-Shared") {
		t.Fatal("a named credential is matched without case, and only when named")
	}
}

func TestURLShowsEveryCredentialAsStarsAndKeepsTheRest(t *testing.T) {
	for raw, want := range map[string]string{
		"nats://TOKEN-9f2@h:4222/orders":                            "nats://***@h:4222/orders",
		"redis://admin:pw@h:6379/0?stream=s":                        "redis://***:***@h:6379/0?stream=s",
		"redis://:pw@h:6379/0?stream=s":                             "redis://:***@h:6379/0?stream=s",
		"kafka://u:p@w@h1:9092,h2:9092/t?sasl=plain":                "kafka://***:***@h1:9092,h2:9092/t?sasl=plain",
		"https://h/hook?api_key=k1&v=2":                             "https://h/hook?api_key=***&v=2",
		"https://h/hook?access_token=a&token=b&secret=c#frag":       "https://h/hook?access_token=***&token=***&secret=***#frag",
		"https://h/hook?password=p&key=k&signature=s&sig=x":         "https://h/hook?password=***&key=***&signature=***&sig=***",
		"https://h/api?X-Amz-Credential=c&X-Amz-Signature=s":        "https://h/api?X-Amz-Credential=***&X-Amz-Signature=***",
		"https://h/api/fn?code=azure-function-key":                  "https://h/api/fn?code=***",
		"https://h/hook?api%5Fkey=k":                                "https://h/hook?api%5Fkey=***",
		"amqp://h/?exchange=x&routing_key=orders.created":           "amqp://h/?exchange=x&routing_key=orders.created",
		"https://h/x?page=2":                                        "https://h/x?page=2",
		"https://h/x":                                               "https://h/x",
		"nats://u:p@h:4222/s":                                       "nats://***:***@h:4222/s",
		"redis://h/0?stream=s&password=x":                           "redis://h/0?stream=s&password=***",
		"nats://alice:s3cret@127.0.0.1:4222/orders.{type}?stream=S": "nats://***:***@127.0.0.1:4222/orders.{type}?stream=S",
		"amqp://***@h:5672/?queue=q":                                "amqp://***@h:5672/?queue=q",
		// What the store's and the replica's urls were shown by before.
		"postgres://intake:pg-pw@db:5432/intake?sslmode=disable": "postgres://***:***@db:5432/intake?sslmode=disable",
		"postgres://db/intake?user=intake&password=pg-pw":        "postgres://db/intake?user=intake&password=***",
		"s3://bucket/prefix?endpoint=http://127.0.0.1:8333":      "s3://bucket/prefix?endpoint=http://127.0.0.1:8333",
		"s3://key-id:key-secret@bucket/prefix":                   "s3://***:***@bucket/prefix",
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%s) = %s, want %s", raw, got, want)
		}
	}
}

func TestPasswordIsStarredInAClientLibrarysMessage(t *testing.T) {
	u, _ := url.Parse("amqp://guest:s3cret-pw@h:5672/")
	if got := Password("dial amqp://guest:s3cret-pw@h:5672/: refused (s3cret-pw)", u); got != "dial amqp://guest:***@h:5672/: refused (***)" {
		t.Fatalf("got %q", got)
	}
	u, _ = url.Parse("nats://h:4222/s")
	if got := Password("refused", u); got != "refused" {
		t.Fatalf("got %q", got)
	}
}
