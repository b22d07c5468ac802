package provider

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake"
)

// The SNS tests sign with keys of their own: AWS publishes no signed message
// with its certificate (the developer guide's examples carry "EXAMPLE…"
// signatures). The messages are the guide's examples
// (https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html),
// signed as SNS signs.

// snsPKI is a test CA and certificates it issued, made once.
type snsPKI struct {
	ca                       *x509.Certificate
	caKey                    *ecdsa.PrivateKey
	key, otherKey            *rsa.PrivateKey
	leafPEM, expiredPEM      string
	unchainedPEM, futurePEM  string
	roots                    *x509.CertPool
	otherCA                  *x509.Certificate
	otherCAKey               *ecdsa.PrivateKey
	pinnedPEM, pinnedOldPEM  string
	otherLeafPEM             string
	notBefore, notAfter      time.Time
	expiredAfter, futureFrom time.Time
}

var (
	snsPKIOnce sync.Once
	snsTestPKI snsPKI
)

func mustRSA(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// snsCert issues a certificate for pub, signed by parent's key (self-signed
// when parent is nil), valid from nb to na, as PEM.
func snsCert(t testing.TB, pub any, parent *x509.Certificate, parentKey crypto.Signer, nb, na time.Time, isCA bool) (*x509.Certificate, string) {
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore:             nb,
		NotAfter:              na,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	if isCA {
		tmpl.Subject.CommonName = "intake test root"
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func pki(t testing.TB) *snsPKI {
	snsPKIOnce.Do(func() {
		p := &snsTestPKI
		var err error
		p.notBefore, p.notAfter = received.Add(-24*time.Hour), received.Add(365*24*time.Hour)
		p.caKey, err = ecdsa.GenerateKey(ecdsaP256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p.ca, _ = snsCert(t, &p.caKey.PublicKey, nil, p.caKey, p.notBefore.Add(-time.Hour), p.notAfter.Add(time.Hour), true)
		p.otherCAKey, _ = ecdsa.GenerateKey(ecdsaP256(), rand.Reader)
		p.otherCA, _ = snsCert(t, &p.otherCAKey.PublicKey, nil, p.otherCAKey, p.notBefore, p.notAfter, true)
		p.roots = x509.NewCertPool()
		p.roots.AddCert(p.ca)
		p.key, p.otherKey = mustRSA(t), mustRSA(t)
		_, p.leafPEM = snsCert(t, &p.key.PublicKey, p.ca, p.caKey, p.notBefore, p.notAfter, false)
		p.expiredAfter = received.Add(-time.Minute)
		_, p.expiredPEM = snsCert(t, &p.key.PublicKey, p.ca, p.caKey, p.notBefore, p.expiredAfter, false)
		p.futureFrom = received.Add(time.Hour)
		_, p.futurePEM = snsCert(t, &p.key.PublicKey, p.ca, p.caKey, p.futureFrom, p.notAfter, false)
		_, p.unchainedPEM = snsCert(t, &p.key.PublicKey, p.otherCA, p.otherCAKey, p.notBefore, p.notAfter, false)
		_, p.pinnedPEM = snsCert(t, &p.key.PublicKey, nil, p.key, p.notBefore, p.notAfter, false)
		_, p.pinnedOldPEM = snsCert(t, &p.key.PublicKey, nil, p.key, p.notBefore, p.expiredAfter, false)
		_, p.otherLeafPEM = snsCert(t, &p.otherKey.PublicKey, p.ca, p.caKey, p.notBefore, p.notAfter, false)
	})
	return &snsTestPKI
}

// snsLoopback serves certificate files (by path) and SubscribeURLs from
// loopback, standing in for every SNS host; it records each URL asked for.
type snsLoopback struct {
	mu    sync.Mutex
	asked []string
	files map[string]string
}

func (l *snsLoopback) fetched() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.asked...)
}

// rewrite sends every request to the loopback server, keeping its path.
type rewrite struct {
	to   *url.URL
	next http.RoundTripper
	l    *snsLoopback
}

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	rw.l.mu.Lock()
	rw.l.asked = append(rw.l.asked, r.URL.String())
	rw.l.mu.Unlock()
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = rw.to.Scheme, rw.to.Host
	return rw.next.RoundTrip(r)
}

// serveSNS points the package's test hooks at a loopback server holding
// files, trusting the test CA; it empties the certificate cache and
// refills the fetch budget.
func serveSNS(t *testing.T, files map[string]string) *snsLoopback {
	t.Helper()
	p := pki(t)
	l := &snsLoopback{files: files}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("Action") == "ConfirmSubscription" {
			w.Write([]byte(`<ConfirmSubscriptionResponse/>`))
			return
		}
		body, ok := l.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	to, _ := url.Parse(srv.URL)
	snsTransport, snsRoots = rewrite{to: to, next: http.DefaultTransport, l: l}, p.roots
	snsFetch = newSNSFetcher()
	t.Cleanup(func() {
		srv.Close()
		snsTransport, snsRoots = nil, nil
		snsFetch = newSNSFetcher()
	})
	return l
}

const (
	snsCertURLGood = "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem"
	snsTopic       = "arn:aws:sns:us-west-2:123456789012:MyTopic"
	snsSubscribe1  = "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-west-2:123456789012:MyTopic&Token=2336412f37"
)

// snsTestSigned is the string SNS signs, written from AWS's guide apart
// from the adapter's own.
func snsTestSigned(m map[string]string) string {
	keys := []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	if m["Type"] != "Notification" {
		keys = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	}
	var b strings.Builder
	for _, k := range keys {
		if v, ok := m[k]; ok {
			b.WriteString(k + "\n" + v + "\n")
		}
	}
	return b.String()
}

// snsSign signs m with key as SignatureVersion m["SignatureVersion"].
func snsSign(t testing.TB, key *rsa.PrivateKey, m map[string]string) string {
	text := []byte(snsTestSigned(m))
	var sig []byte
	var err error
	if m["SignatureVersion"] == "1" {
		d := sha1.Sum(text)
		sig, err = rsa.SignPKCS1v15(nil, key, crypto.SHA1, d[:])
	} else {
		d := sha256.Sum256(text)
		sig, err = rsa.SignPKCS1v15(nil, key, crypto.SHA256, d[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// snsNote is the guide's example notification.
func snsNote(version string) map[string]string {
	return map[string]string{
		"Type":             "Notification",
		"MessageId":        "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
		"TopicArn":         snsTopic,
		"Subject":          "My First Message",
		"Message":          "Hello world!",
		"Timestamp":        "2025-03-14T09:26:50.655Z",
		"SignatureVersion": version,
		"SigningCertURL":   snsCertURLGood,
		"UnsubscribeURL":   "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c9135db0-26c4-47ec-8998-413945fb5a96",
	}
}

// snsConfirmation is the guide's example subscription confirmation.
func snsConfirmation() map[string]string {
	return map[string]string{
		"Type":             "SubscriptionConfirmation",
		"MessageId":        "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
		"Token":            "2336412f37",
		"TopicArn":         snsTopic,
		"Message":          "You have chosen to subscribe to the topic arn:aws:sns:us-west-2:123456789012:MyTopic.\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		"SubscribeURL":     snsSubscribe1,
		"Timestamp":        "2025-03-14T09:26:50.655Z",
		"SignatureVersion": "1",
		"SigningCertURL":   snsCertURLGood,
	}
}

// snsRequest is m signed with key, as SNS posts it.
func snsRequest(t testing.TB, key *rsa.PrivateKey, m map[string]string) *Request {
	m["Signature"] = snsSign(t, key, m)
	return snsPost(t, m)
}

func snsPost(t testing.TB, m map[string]string) *Request {
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return post(string(body), "x-amz-sns-message-type", m["Type"], "x-amz-sns-message-id", m["MessageId"], "Content-Type", "text/plain; charset=UTF-8")
}

func snsFiles(pemText string) map[string]string {
	u, _ := url.Parse(snsCertURLGood)
	return map[string]string{u.Path: pemText}
}

func TestAWSSNSVerifiesSignatureVersions1And2WithACertificateFetchedOnce(t *testing.T) {
	p := pki(t)
	l := serveSNS(t, snsFiles(p.leafPEM))
	for _, version := range []string{"1", "2"} {
		wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote(version)), nil, nil))
	}
	noSubject := snsNote("2")
	delete(noSubject, "Subject")
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, noSubject), nil, nil))
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsConfirmation()), nil, nil))
	unsub := snsConfirmation()
	unsub["Type"] = "UnsubscribeConfirmation"
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, unsub), nil, nil))
	if got := l.fetched(); len(got) != 1 || got[0] != snsCertURLGood {
		t.Fatalf("fetched %v, want the certificate once", got)
	}
}

func TestAWSSNSRejects(t *testing.T) {
	p := pki(t)
	serveSNS(t, snsFiles(p.leafPEM))
	signed := func(change func(m map[string]string)) *Request {
		m := snsNote("2")
		m["Signature"] = snsSign(t, p.key, m)
		change(m)
		return snsPost(t, m)
	}
	rawDelivery := snsRequest(t, p.key, snsNote("2"))
	rawDelivery.Header.Set("x-amz-sns-rawdelivery", "true")
	wantAllRejected(t, "aws_sns", nil, []rejectCase{
		{"message changed by one byte", signed(func(m map[string]string) { m["Message"] = "Hello world?" }), nil},
		{"subject dropped", signed(func(m map[string]string) { delete(m, "Subject") }), nil},
		{"topic changed", signed(func(m map[string]string) { m["TopicArn"] += "2" }), nil},
		{"type changed", signed(func(m map[string]string) { m["Type"] = "UnsubscribeConfirmation" }), nil},
		{"version 2 signature claimed as 1", signed(func(m map[string]string) { m["SignatureVersion"] = "1" }), nil},
		{"unknown version", signed(func(m map[string]string) { m["SignatureVersion"] = "3" }), nil},
		{"signature missing", signed(func(m map[string]string) { delete(m, "Signature") }), nil},
		{"signature not base64", signed(func(m map[string]string) { m["Signature"] = "not base64!" }), nil},
		{"signed with another key", snsRequest(t, p.otherKey, snsNote("2")), nil},
		{"certificate URL missing", signed(func(m map[string]string) { delete(m, "SigningCertURL") }), nil},
		{"certificate not found", signed(func(m map[string]string) { m["SigningCertURL"] = strings.Replace(snsCertURLGood, "f3ec", "0000", 1) }), nil},
		{"raw message delivery", rawDelivery, nil},
		{"not JSON", post("Type=Notification"), nil},
	})
}

func TestAWSSNSRefusesAForeignSigningCertURLAndFetchesNothing(t *testing.T) {
	p := pki(t)
	for _, u := range []string{
		"https://evil.example.com/SimpleNotificationService-1.pem",
		"http://sns.us-west-2.amazonaws.com/SimpleNotificationService-1.pem",
		"https://sns.us-west-2.amazonaws.com.evil.example.com/SimpleNotificationService-1.pem",
		"https://evil.example.com/sns.us-west-2.amazonaws.com/SimpleNotificationService-1.pem",
		"https://sns.us-west-2.amazonaws.com:8443/SimpleNotificationService-1.pem",
		"https://user@sns.us-west-2.amazonaws.com/SimpleNotificationService-1.pem",
		"https://sns.us-west-2.amazonaws.com/SimpleNotificationService-1.txt",
		"https://sns.us-west-2.amazonaws.com/SimpleNotificationService-1.pem?x=.pem",
		"https://s3.amazonaws.com/SimpleNotificationService-1.pem",
		"https://sns.amazonaws.com/SimpleNotificationService-1.pem",
		"//sns.us-west-2.amazonaws.com/SimpleNotificationService-1.pem",
	} {
		t.Run(u, func(t *testing.T) {
			l := serveSNS(t, map[string]string{"/SimpleNotificationService-1.pem": p.leafPEM, "/sns.us-west-2.amazonaws.com/SimpleNotificationService-1.pem": p.leafPEM})
			m := snsNote("2")
			m["SigningCertURL"] = u
			err := adapter(t, "aws_sns").Verify(snsRequest(t, p.key, m), nil, nil)
			wantRejected(t, err)
			if !strings.Contains(err.Error(), "forgery") {
				t.Errorf("Verify: %v, want it named a forgery", err)
			}
			if got := l.fetched(); len(got) != 0 {
				t.Fatalf("fetched %v", got)
			}
		})
	}
}

func TestAWSSNSAcceptsTheChinaRegionsHost(t *testing.T) {
	p := pki(t)
	const cn = "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-1.pem"
	l := serveSNS(t, map[string]string{"/SimpleNotificationService-1.pem": p.leafPEM})
	m := snsNote("2")
	m["SigningCertURL"] = cn
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, m), nil, nil))
	if got := l.fetched(); len(got) != 1 || got[0] != cn {
		t.Fatalf("fetched %v", got)
	}
}

func TestAWSSNSRefusesACertificateThatExpiredOrDoesNotChain(t *testing.T) {
	p := pki(t)
	for name, certPEM := range map[string]string{
		"expired before receipt":    p.expiredPEM,
		"valid only after receipt":  p.futurePEM,
		"issued by an untrusted CA": p.unchainedPEM,
		"self-signed":               p.pinnedPEM,
		"not a certificate":         "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
		"too large":                 p.leafPEM + strings.Repeat(" ", snsMaxCertBytes),
	} {
		t.Run(name, func(t *testing.T) {
			serveSNS(t, snsFiles(certPEM))
			wantRejected(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("2")), nil, nil))
		})
	}
	// The same expired certificate verified a message received before it
	// expired: validity is judged at receipt, never at the worker's clock.
	serveSNS(t, snsFiles(p.expiredPEM))
	r := snsRequest(t, p.key, snsNote("2"))
	r.ReceivedAt = p.expiredAfter.Add(-time.Minute)
	wantVerified(t, adapter(t, "aws_sns").Verify(r, nil, nil))
}

func TestAWSSNSUsesAPinnedCertificateAndFetchesNothing(t *testing.T) {
	p := pki(t)
	l := serveSNS(t, snsFiles(p.otherLeafPEM))
	cfg := Config{"certificate": p.pinnedOldPEM + p.pinnedPEM}
	if err := adapter(t, "aws_sns").ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	// A pinned certificate is the operator's trust: self-signed is fine.
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("1")), nil, cfg))
	m := snsNote("2")
	m["SigningCertURL"] = "https://evil.example.com/x.pem"
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, m), nil, cfg))
	wantRejected(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.otherKey, snsNote("2")), nil, cfg))
	wantRejected(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("2")), nil, Config{"certificate": p.pinnedOldPEM}))
	if got := l.fetched(); len(got) != 0 {
		t.Fatalf("fetched %v with a pinned certificate", got)
	}
}

func TestAWSSNSAcceptsOnlyTheConfiguredTopics(t *testing.T) {
	p := pki(t)
	serveSNS(t, snsFiles(p.leafPEM))
	r := snsRequest(t, p.key, snsNote("2"))
	wantVerified(t, adapter(t, "aws_sns").Verify(r, nil, Config{"topic_arns": []any{"arn:aws:sns:us-east-1:1:Other", snsTopic}}))
	wantRejected(t, adapter(t, "aws_sns").Verify(r, nil, Config{"topic_arns": []any{"arn:aws:sns:us-east-1:1:Other"}}))
}

func TestAWSSNSJudgesTheTimestampOnlyWhenAToleranceIsSet(t *testing.T) {
	p := pki(t)
	serveSNS(t, snsFiles(p.leafPEM))
	r := snsRequest(t, p.key, snsNote("2"))
	r.ReceivedAt = received.Add(2 * time.Hour)
	wantVerified(t, adapter(t, "aws_sns").Verify(r, nil, nil))
	wantRejected(t, adapter(t, "aws_sns").Verify(r, nil, Config{"tolerance": "1h"}))
	r.ReceivedAt = received
	wantVerified(t, adapter(t, "aws_sns").Verify(r, nil, Config{"tolerance": "1h"}))
}

func TestAWSSNSConfirmsAVerifiedSubscriptionOnAnSNSHostOnly(t *testing.T) {
	p := pki(t)
	a := adapter(t, "aws_sns").(Challenger)
	l := serveSNS(t, snsFiles(p.leafPEM))
	ans, ok := a.Challenge(snsRequest(t, p.key, snsConfirmation()), nil, nil)
	if !ok || ans.Status != http.StatusOK {
		t.Fatalf("Challenge = %+v, %v; want 200", ans, ok)
	}
	if got := l.fetched(); len(got) != 2 || got[1] != snsSubscribe1 {
		t.Fatalf("fetched %v, want the certificate then the SubscribeURL", got)
	}
	in, err := adapter(t, "aws_sns").Interpret(snsRequest(t, p.key, snsConfirmation()), nil)
	if err != nil || !in.Challenge || len(in.Events) != 0 || in.EventType != "aws_sns.subscription_confirmation" {
		t.Fatalf("Interpret = %+v, %v; want a handshake", in, err)
	}

	for name, change := range map[string]func(m map[string]string){
		"foreign SubscribeURL": func(m map[string]string) { m["SubscribeURL"] = "https://evil.example.com/?Action=ConfirmSubscription" },
		"http SubscribeURL":    func(m map[string]string) { m["SubscribeURL"] = strings.Replace(snsSubscribe1, "https", "http", 1) },
		"SubscribeURL not a confirmation": func(m map[string]string) {
			m["SubscribeURL"] = "https://sns.us-west-2.amazonaws.com/?Action=Publish"
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := serveSNS(t, snsFiles(p.leafPEM))
			m := snsConfirmation()
			change(m)
			if ans, ok := a.Challenge(snsRequest(t, p.key, m), nil, nil); ok {
				t.Fatalf("answered %+v", ans)
			}
			if got := l.fetched(); len(got) != 0 {
				t.Fatalf("fetched %v", got)
			}
		})
	}
	t.Run("unverified confirmation", func(t *testing.T) {
		l := serveSNS(t, snsFiles(p.leafPEM))
		if ans, ok := a.Challenge(snsRequest(t, p.otherKey, snsConfirmation()), nil, nil); ok {
			t.Fatalf("answered %+v", ans)
		}
		for _, u := range l.fetched() {
			if strings.Contains(u, "ConfirmSubscription") {
				t.Fatalf("confirmed a forged subscription: %v", u)
			}
		}
	})
	t.Run("topic not accepted", func(t *testing.T) {
		l := serveSNS(t, snsFiles(p.leafPEM))
		if ans, ok := a.Challenge(snsRequest(t, p.key, snsConfirmation()), nil, Config{"topic_arns": []any{"arn:aws:sns:us-east-1:1:Other"}}); ok {
			t.Fatalf("answered %+v", ans)
		}
		if got := l.fetched(); len(got) != 0 {
			t.Fatalf("fetched %v", got)
		}
	})
	t.Run("notification", func(t *testing.T) {
		serveSNS(t, snsFiles(p.leafPEM))
		if ans, ok := a.Challenge(snsRequest(t, p.key, snsNote("2")), nil, nil); ok {
			t.Fatalf("answered a notification: %+v", ans)
		}
	})
}

func TestAWSSNSInterpretsTheMessageIdAndAStableType(t *testing.T) {
	p := pki(t)
	m := snsNote("2")
	m["MessageAttributes"] = "" // replaced below: a map in the body
	m["Signature"] = snsSign(t, p.key, m)
	raw, _ := json.Marshal(m)
	body := strings.Replace(string(raw), `"MessageAttributes":""`, `"MessageAttributes":{"event":{"Type":"String","Value":"order.created"}}`, 1)
	r := post(body)
	ev := oneEvent(t, adapter(t, "aws_sns"), r, nil)
	if ev.ProviderEventID != "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324" || ev.Type != "aws_sns.notification" || ev.Kind != intake.KindEvent {
		t.Fatalf("got id %q type %q kind %q", ev.ProviderEventID, ev.Type, ev.Kind)
	}
	if !ev.OccurredAt.Equal(time.Date(2025, 3, 14, 9, 26, 50, 655e6, time.UTC)) || !equalStrings(ev.ObjectIDs, []string{snsTopic}) {
		t.Errorf("OccurredAt %v, ObjectIDs %v", ev.OccurredAt, ev.ObjectIDs)
	}
	if ev := oneEvent(t, adapter(t, "aws_sns"), r, Config{"type_attribute": "event"}); ev.Type != "aws_sns.order.created" {
		t.Errorf("with type_attribute: type %q", ev.Type)
	}
	if ev := oneEvent(t, adapter(t, "aws_sns"), r, Config{"type_attribute": "absent"}); ev.Type != "aws_sns.notification" {
		t.Errorf("with an absent type_attribute: type %q", ev.Type)
	}
	unsub := snsConfirmation()
	unsub["Type"] = "UnsubscribeConfirmation"
	in, err := adapter(t, "aws_sns").Interpret(snsRequest(t, p.key, unsub), nil)
	if err != nil || !in.Challenge || in.EventType != "aws_sns.unsubscribe_confirmation" || len(in.Events) != 0 {
		t.Fatalf("Interpret(unsubscribe) = %+v, %v", in, err)
	}
}

func TestAWSSNSRejectsUninterpretableBodiesPermanently(t *testing.T) {
	for _, body := range []string{"", "not json", `{"Type":"Notification"}`, `{"Type":"Other","MessageId":"m"}`, "[]"} {
		_, err := adapter(t, "aws_sns").Interpret(post(body), nil)
		wantPermanent(t, err)
	}
}

func TestAWSSNSConfigIsChecked(t *testing.T) {
	p := pki(t)
	a := adapter(t, "aws_sns")
	for _, cfg := range []Config{
		{"topic_arns": "arn:aws:sns:us-east-1:1:T"},
		{"topic_arns": []any{"MyTopic"}},
		{"certificate": "not a certificate"},
		{"certificate": p.pinnedPEM + "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"},
		{"type_attribute": 7},
		{"tolerance": "soon"},
	} {
		if err := a.ValidateConfig(cfg); err == nil {
			t.Errorf("ValidateConfig(%v) accepted", cfg)
		}
	}
}

func TestAWSSNSConnectionsNeedNoSecret(t *testing.T) {
	if err := CheckSecrets("aws_sns", nil); err != nil {
		t.Fatalf("CheckSecrets: %v", err)
	}
	if err := CheckSecrets("stripe", nil); err == nil {
		t.Fatal("stripe without a secret was accepted")
	}
}

// The SNS fuzz case's bodies: the fuzzed signature replaces the
// placeholder. The confirmation's SubscribeURL is on no SNS host, so a
// fuzzed handshake never reaches the network.
const (
	snsFuzzBody = `{"Type":"Notification","MessageId":"m-1","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic",` +
		`"Subject":"s","Message":"{\"order\":1}","Timestamp":"2025-03-14T09:26:50.655Z","SignatureVersion":"2",` +
		`"Signature":"` + adyenSigPlaceholder + `","SigningCertURL":"` + snsCertURLGood + `"}`
	snsFuzzConfirmation = `{"Type":"SubscriptionConfirmation","MessageId":"m-2","Token":"t","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic",` +
		`"Message":"confirm","SubscribeURL":"https://sns.example.com/?Action=ConfirmSubscription","Timestamp":"2025-03-14T09:26:50.655Z",` +
		`"SignatureVersion":"1","Signature":"` + adyenSigPlaceholder + `","SigningCertURL":"` + snsCertURLGood + `"}`
)

// snsFuzzCase drives SNS with a pinned certificate, so nothing is fetched: a
// request is genuine when its Signature field is the test key's signature
// of the string SNS signs.
func snsFuzzCase() fuzzCase {
	p := pki(nil)
	build := func(in fuzzInput) *Request {
		body := strings.ReplaceAll(string(in.body), adyenSigPlaceholder, in.sig)
		return &Request{Method: "POST", URL: fuzzURL, Header: headers("x-amz-sns-message-type", in.event),
			Body: []byte(body), ReceivedAt: time.Unix(in.receivedAt, 0)}
	}
	fields := func(body []byte) map[string]string {
		m, err := decodeObject(body)
		if err != nil {
			return nil
		}
		out := map[string]string{}
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return out
	}
	return fuzzCase{
		cfg:      Config{"certificate": p.pinnedPEM},
		otherKey: Config{"certificate": p.otherLeafPEM},
		request:  build,
		sign: func(in fuzzInput) string {
			in.sig = ""
			m := fields(build(in).Body)
			if m == nil {
				return "\x00 unsignable"
			}
			return snsSign(nil, p.key, m)
		},
		genuine: func(in fuzzInput) bool {
			m := fields(build(in).Body)
			sig, err := base64.StdEncoding.DecodeString(m["Signature"])
			if m == nil || err != nil {
				return false
			}
			text := []byte(snsTestSigned(m))
			switch m["SignatureVersion"] {
			case "1":
				d := sha1.Sum(text)
				return rsa.VerifyPKCS1v15(&p.key.PublicKey, crypto.SHA1, d[:], sig) == nil
			case "2":
				d := sha256.Sum256(text)
				return rsa.VerifyPKCS1v15(&p.key.PublicKey, crypto.SHA256, d[:], sig) == nil
			}
			return false
		},
	}
}

// snsLeafUnder issues a leaf for key under a fresh intermediate of the test
// root, naming aia as where its issuer is; it returns the leaf's PEM and
// the intermediate's DER.
func snsLeafUnder(t *testing.T, aia ...string) (string, []byte) {
	p := pki(t)
	interKey, err := ecdsa.GenerateKey(ecdsaP256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	inter, _ := snsCert(t, &interKey.PublicKey, p.ca, p.caKey, p.notBefore, p.notAfter, true)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: p.notBefore, NotAfter: p.notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		IssuingCertificateURL: aia,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, inter, &p.key.PublicKey, interKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), inter.Raw
}

func TestAWSSNSFetchesAMissingIssuerOnlyFromAmazonTrust(t *testing.T) {
	p := pki(t)
	const aia = "http://crt.r2m01.amazontrust.com/r2m01.cer"
	leaf, inter := snsLeafUnder(t, aia)
	files := snsFiles(leaf)
	files["/r2m01.cer"] = string(inter)
	l := serveSNS(t, files)
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("2")), nil, nil))
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("1")), nil, nil))
	if got := l.fetched(); len(got) != 2 || got[1] != aia {
		t.Fatalf("fetched %v, want the certificate then its issuer, once each", got)
	}

	leaf, inter = snsLeafUnder(t, "http://crt.evil.example.com/r2m01.cer")
	files = snsFiles(leaf)
	files["/r2m01.cer"] = string(inter)
	l = serveSNS(t, files)
	wantRejected(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("2")), nil, nil))
	if got := l.fetched(); len(got) != 1 || got[0] != snsCertURLGood {
		t.Fatalf("fetched %v, want the certificate alone", got)
	}
}

// snsNoteAt is the guide's notification naming the certificate at path.
func snsNoteAt(path string) map[string]string {
	m := snsNote("2")
	m["SigningCertURL"] = "https://sns.us-west-2.amazonaws.com" + path
	return m
}

// Forgeries naming certificate files that do not exist on an SNS host are
// refused, each a fetch, until the fetch budget is spent; then a new URL
// is not fetched but tried again later, and the budget refills with time.
// A certificate already read is used whatever the budget.
func TestAWSSNSFetchesNewCertificateURLsWithinABudget(t *testing.T) {
	p := pki(t)
	clock := fakeKeyClock(t)
	l := serveSNS(t, snsFiles(p.leafPEM))
	a := adapter(t, "aws_sns")
	wantVerified(t, a.Verify(snsRequest(t, p.key, snsNote("2")), nil, nil))
	for i := range snsFetchBurst - 1 {
		wantRejected(t, a.Verify(snsRequest(t, p.key, snsNoteAt(fmt.Sprintf("/SimpleNotificationService-%d.pem", i))), nil, nil))
	}
	if got := len(l.fetched()); got != snsFetchBurst {
		t.Fatalf("fetched %d, want %d", got, snsFetchBurst)
	}
	over := snsRequest(t, p.key, snsNoteAt("/SimpleNotificationService-over.pem"))
	wantTransient(t, a.Verify(over, nil, nil))
	if got := len(l.fetched()); got != snsFetchBurst {
		t.Fatalf("past the budget: fetched %d, want still %d", got, snsFetchBurst)
	}
	wantVerified(t, a.Verify(snsRequest(t, p.key, snsNote("1")), nil, nil))
	clock.Advance(snsFetchEvery)
	wantRejected(t, a.Verify(over, nil, nil))
	wantTransient(t, a.Verify(snsRequest(t, p.key, snsNoteAt("/SimpleNotificationService-next.pem")), nil, nil))
	if got := l.fetched(); len(got) != snsFetchBurst+1 || !strings.HasSuffix(got[snsFetchBurst], "-over.pem") {
		t.Fatalf("fetched %v, want one more once the budget refilled", got)
	}
	// The budget spent is the forger's org's: another org's message naming
	// a certificate not yet read is fetched and verified.
	l.files["/SimpleNotificationService-other.pem"] = p.leafPEM
	other := snsRequest(t, p.key, snsNoteAt("/SimpleNotificationService-other.pem"))
	other.Org = "org_b"
	wantVerified(t, a.Verify(other, nil, nil))
	if got := l.fetched(); len(got) != snsFetchBurst+2 {
		t.Fatalf("fetched %v, want another org's certificate fetched", got)
	}
}

// A certificate whose fetch fails for a reason of the moment leaves the
// message to be tried again; one the host says is not there refuses it.
func TestAWSSNSTriesAgainLaterWhenTheCertificateCannotBeReadNow(t *testing.T) {
	p := pki(t)
	for _, c := range []struct {
		name   string
		status int // 0: the connection fails
		want   func(*testing.T, error)
	}{
		{"503", http.StatusServiceUnavailable, wantTransient},
		{"429", http.StatusTooManyRequests, wantTransient},
		{"connection reset", 0, wantTransient},
		{"404", http.StatusNotFound, wantRejected},
		{"403", http.StatusForbidden, wantRejected},
	} {
		t.Run(c.name, func(t *testing.T) {
			serveSNS(t, snsFiles(p.leafPEM))
			failing := true
			snsTransport = failWith(snsTransport, &failing, c.status)
			c.want(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("2")), nil, nil))
		})
	}
	// Once the host answers, the same message verifies.
	serveSNS(t, snsFiles(p.leafPEM))
	failing := true
	snsTransport = failWith(snsTransport, &failing, http.StatusBadGateway)
	r := snsRequest(t, p.key, snsNote("2"))
	wantTransient(t, adapter(t, "aws_sns").Verify(r, nil, nil))
	failing = false
	wantVerified(t, adapter(t, "aws_sns").Verify(r, nil, nil))
}

// A certificate's chain is verified once for the times it is valid: a
// later message received within them is verified by the kept key (here
// with no root trusted any more), and one received after the chain
// expired is checked again, and refused.
func TestAWSSNSKeepsAVerifiedChainForTheTimeItIsValid(t *testing.T) {
	p := pki(t)
	serveSNS(t, snsFiles(p.leafPEM))
	a := adapter(t, "aws_sns")
	wantVerified(t, a.Verify(snsRequest(t, p.key, snsNote("2")), nil, nil))
	snsRoots = x509.NewCertPool()
	wantVerified(t, a.Verify(snsRequest(t, p.key, snsNote("1")), nil, nil))
	late := snsRequest(t, p.key, snsNote("2"))
	late.ReceivedAt = p.notAfter.Add(time.Minute)
	wantRejected(t, a.Verify(late, nil, nil))
	early := snsRequest(t, p.key, snsNote("2"))
	early.ReceivedAt = p.notBefore.Add(-time.Minute)
	wantRejected(t, a.Verify(early, nil, nil))
	// The kept key still verifies only what it signed.
	wantRejected(t, a.Verify(snsRequest(t, p.otherKey, snsNote("2")), nil, nil))
}

// The certificates kept are bounded: past snsMaxCached URLs, the one used
// longest ago is dropped (and fetched again when named again), the one
// used last is kept.
func TestAWSSNSKeepsAtMostSnsMaxCachedCertificates(t *testing.T) {
	p := pki(t)
	clock := fakeKeyClock(t)
	files := map[string]string{}
	for i := range snsMaxCached + 1 {
		files[fmt.Sprintf("/SimpleNotificationService-%d.pem", i)] = p.leafPEM
	}
	l := serveSNS(t, files)
	a := adapter(t, "aws_sns")
	verify := func(i int) {
		t.Helper()
		clock.Advance(snsFetchEvery) // within the fetch budget
		wantVerified(t, a.Verify(snsRequest(t, p.key, snsNoteAt(fmt.Sprintf("/SimpleNotificationService-%d.pem", i))), nil, nil))
	}
	for i := range snsMaxCached {
		verify(i)
	}
	verify(1) // used last: kept
	verify(snsMaxCached)
	if n := snsFetch.cache.Len(); n != snsMaxCached {
		t.Fatalf("%d certificates kept, want %d", n, snsMaxCached)
	}
	before := len(l.fetched())
	verify(1)
	if got := len(l.fetched()); got != before {
		t.Fatalf("the certificate used last was fetched again")
	}
	verify(0)
	if got := l.fetched(); len(got) != before+1 || !strings.HasSuffix(got[before], "-0.pem") {
		t.Fatalf("fetched %v after the first was dropped, want it fetched again", got[before:])
	}
}

// A certificate names at most snsMaxIssuers issuers to fetch.
func TestAWSSNSFetchesAtMostTwoIssuersOfACertificate(t *testing.T) {
	p := pki(t)
	var aia []string
	for i := range 5 {
		aia = append(aia, fmt.Sprintf("http://crt.r2m0%d.amazontrust.com/missing%d.cer", i, i))
	}
	leaf, _ := snsLeafUnder(t, aia...)
	l := serveSNS(t, snsFiles(leaf))
	wantRejected(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("2")), nil, nil))
	if got := l.fetched(); len(got) != 1+snsMaxIssuers {
		t.Fatalf("fetched %v, want the certificate and %d issuers", got, snsMaxIssuers)
	}
}

// A connection's pinned certificate is parsed once, whatever the number
// of messages it verifies; a text that does not parse is not kept.
func TestAWSSNSParsesAPinnedCertificateOnce(t *testing.T) {
	p := pki(t)
	text := p.pinnedPEM + "\n" // a text no other test pins
	parses := 0
	parse := func(b []byte) ([]*x509.Certificate, error) { parses++; return parseCertificates(b) }
	for range 3 {
		if certs, err := snsPinned.get(text, parse); err != nil || len(certs) != 1 {
			t.Fatalf("get = %v, %v", certs, err)
		}
	}
	for range 2 {
		if _, err := snsPinned.get("not a certificate", parse); err == nil {
			t.Fatal("a text that does not parse was accepted")
		}
	}
	if parses != 3 {
		t.Fatalf("parsed %d times, want once for the certificate and each time for the text that does not parse", parses)
	}
	// Verify goes through the cache: a connection's text is kept.
	mine := p.pinnedPEM + "\n\n"
	wantVerified(t, adapter(t, "aws_sns").Verify(snsRequest(t, p.key, snsNote("2")), nil, Config{"certificate": mine}))
	if !snsPinned.parsed.Contains(sha256.Sum256([]byte(mine))) {
		t.Fatal("the connection's pinned certificate was not kept parsed")
	}
}

// An issuer that cannot be read now leaves the message to be tried again,
// not refused.
func TestAWSSNSTriesAgainLaterWhenAnIssuerCannotBeReadNow(t *testing.T) {
	p := pki(t)
	const aia = "http://crt.r2m01.amazontrust.com/r2m01.cer"
	leaf, inter := snsLeafUnder(t, aia)
	files := snsFiles(leaf)
	files["/r2m01.cer"] = string(inter)
	serveSNS(t, files)
	issuerDown := true
	next := snsTransport
	snsTransport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if issuerDown && r.URL.Host == "crt.r2m01.amazontrust.com" {
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		}
		return next.RoundTrip(r)
	})
	r := snsRequest(t, p.key, snsNote("2"))
	wantTransient(t, adapter(t, "aws_sns").Verify(r, nil, nil))
	issuerDown = false
	wantVerified(t, adapter(t, "aws_sns").Verify(r, nil, nil))
}
