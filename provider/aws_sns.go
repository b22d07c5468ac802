package provider

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
)

// awsSNSAdapter verifies Amazon SNS HTTP(S) deliveries
// (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html).
// The body is a JSON envelope whose Signature is the base64 RSA PKCS #1 v1.5
// signature (SignatureVersion 1: SHA-1; 2: SHA-256) of "Key\nValue\n" for
// Message, MessageId, Subject (when present), Timestamp, TopicArn and Type
// (a Notification), or Message, MessageId, SubscribeURL, Timestamp, Token,
// TopicArn and Type (a SubscriptionConfirmation or UnsubscribeConfirmation).
// The key is the certificate at SigningCertURL, fetched only over https
// from sns.<region>.amazonaws.com(.cn) and a path ending .pem; any other
// URL is a forgery and nothing is fetched. The certificate must chain to a
// trusted root (its issuers fetched, when the file lacks them, only from
// Amazon's *.amazontrust.com) and be valid when the message was received;
// it is fetched once, and kept with its verified chain (the 64 used last,
// by URL). Certificate URLs not yet read are fetched at most 10 at once
// and 10 a minute after, in the process: past that, or when the fetch
// fails for a reason of the moment (the network, a timeout, a 5xx or 429
// answer), the message is tried again later; an answer that is no
// certificate (a 404) refuses it. The operator may pin certificates (config
// certificate, PEM), and then nothing is fetched. The connection needs no
// secret: AWS signs with its own keys. Since any AWS account can sign a
// message to any endpoint, config topic_arns (a list) names the topics the
// connection accepts. A SubscriptionConfirmation that verifies is
// confirmed at ingress by fetching its SubscribeURL, only on an SNS host.
// SNS signs a time but documents no bound on it (it retries for up to an
// hour and more), so none is applied unless config tolerance is set.
type awsSNSAdapter struct{}

func init() { Register(awsSNSAdapter{}) }

func (awsSNSAdapter) Name() string { return "aws_sns" }

// SignsWithOwnKeys marks a provider whose connections need no secret.
func (awsSNSAdapter) SignsWithOwnKeys() {}

const (
	snsNotification = "Notification"
	snsSubscribe    = "SubscriptionConfirmation"
	snsUnsubscribe  = "UnsubscribeConfirmation"

	// snsMaxCertBytes bounds a fetched certificate file; AWS's are ~2 KiB.
	snsMaxCertBytes = 64 << 10
	// snsFetchTimeout bounds each fetch of a certificate or SubscribeURL.
	snsFetchTimeout = 10 * time.Second
	// snsMaxCached bounds the certificate cache; AWS uses a handful.
	snsMaxCached = 64
	// snsFetchBurst certificate URLs not yet read may be fetched at once
	// for each org, then one per snsFetchEvery: AWS uses a handful, and any
	// other URL on an SNS host is a forgery's, which costs AWS and a worker
	// slot a fetch each. The budget is the org's whose message names the
	// URL, so one org's forgeries never hold another's certificates back.
	snsFetchBurst = 10
	snsFetchEvery = 6 * time.Second
	// snsMaxIssuers bounds the issuers fetched for one certificate; AWS's
	// name one.
	snsMaxIssuers = 2
)

// snsHost is the host of every SNS regional endpoint, as AWS's own message
// validators match it.
var snsHost = regexp.MustCompile(`^sns\.[a-z0-9-]{3,}\.amazonaws\.com(\.cn)?$`)

// Hooks for tests alone: snsTransport carries the fetches (nil: the network)
// and snsRoots are the roots a fetched certificate must chain to (nil: the
// system's). Nothing outside this package's tests sets them.
var (
	snsTransport http.RoundTripper
	snsRoots     *x509.CertPool
)

// snsClient fetches from SNS hosts only: bounded in time, never following a
// redirect (which could leave the allow-list).
func snsClient() *http.Client {
	return &http.Client{
		Transport:     snsTransport,
		Timeout:       snsFetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// snsSigner is a certificate file read from its URL: the certificates,
// and once the first (the leaf) has chained to a root, its key and when
// that chain is valid, so a message received then needs no check again.
type snsSigner struct {
	certs []*x509.Certificate

	mu          sync.Mutex
	key         *rsa.PublicKey
	from, until time.Time
}

// keyAt is the leaf's key if its chain was verified valid at at.
func (s *snsSigner) keyAt(at time.Time) *rsa.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == nil || at.Before(s.from) || at.After(s.until) {
		return nil
	}
	return s.key
}

// verified keeps key as the leaf's, chain as verified: valid from its
// latest NotBefore to its earliest NotAfter.
func (s *snsSigner) verified(key *rsa.PublicKey, chain []*x509.Certificate) {
	from, until := chain[0].NotBefore, chain[0].NotAfter
	for _, c := range chain[1:] {
		if c.NotBefore.After(from) {
			from = c.NotBefore
		}
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	s.mu.Lock()
	s.key, s.from, s.until = key, from, until
	s.mu.Unlock()
}

// snsFetcher reads certificate files by URL: from its cache, or fetched
// once however many messages ask at once, within the fetch budget of the
// org that asked first.
type snsFetcher struct {
	cache  *lru.Cache[string, *snsSigner]
	budget *fair.Rates
	flight singleflight.Group
}

func newSNSFetcher() *snsFetcher {
	cache, _ := lru.New[string, *snsSigner](snsMaxCached)
	return &snsFetcher{cache: cache, budget: &fair.Rates{What: "certificate fetch", Every: float64(time.Second) / float64(snsFetchEvery), Burst: snsFetchBurst}}
}

// snsFetch is the process's; tests replace it.
var snsFetch = newSNSFetcher()

// snsPinned keeps connections' pinned certificates parsed.
var snsPinned = newPEMCache[[]*x509.Certificate](pinnedEntries)

// errSNSBudget: more certificate URLs not yet read were asked for than the
// fetch budget allows.
var errSNSBudget = Transient("more new certificate URLs were named than %d a minute; tried again later", int(time.Minute/snsFetchEvery))

// get returns the signer at u, fetching and reading it with parse within
// org's budget when it is not kept; a failure is not kept.
func (f *snsFetcher) get(ctx context.Context, org, u string, parse func([]byte) ([]*x509.Certificate, error)) (*snsSigner, error) {
	if s, ok := f.cache.Get(u); ok {
		return s, nil
	}
	v, err, _ := f.flight.Do(u, func() (any, error) {
		if s, ok := f.cache.Get(u); ok {
			return s, nil
		}
		if f.budget.Allow(org, keyClock.Now()) != nil {
			return nil, errSNSBudget
		}
		body, err := snsGet(ctx, u)
		if err != nil {
			return nil, err
		}
		certs, err := parse(body)
		if err != nil {
			return nil, fmt.Errorf("the file %v", err)
		}
		s := &snsSigner{certs: certs}
		f.cache.Add(u, s)
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*snsSigner), nil
}

// snsURL checks that raw names an SNS host over https, with no port or
// user; the error says why not and never carries the URL's query.
func snsURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || raw == "":
		return nil, errors.New("is not a URL")
	case u.Scheme != "https":
		return nil, errors.New("is not https")
	case u.User != nil || u.Port() != "":
		return nil, errors.New("carries a user or a port")
	case !snsHost.MatchString(strings.ToLower(u.Hostname())):
		return nil, fmt.Errorf("is on %q, not an SNS host", u.Hostname())
	}
	return u, nil
}

// snsCertURL checks a SigningCertURL: an SNS host and a .pem file.
func snsCertURL(raw string) (*url.URL, error) {
	u, err := snsURL(raw)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, ".pem") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("does not name a .pem file")
	}
	return u, nil
}

// snsSubscribeURL checks a SubscribeURL: an SNS host asked to confirm a
// subscription.
func snsSubscribeURL(raw string) (*url.URL, error) {
	u, err := snsURL(raw)
	if err != nil {
		return nil, err
	}
	if u.Query().Get("Action") != "ConfirmSubscription" {
		return nil, errors.New("does not confirm a subscription")
	}
	return u, nil
}

// parseCertificates reads every CERTIFICATE block of a PEM text.
func parseCertificates(text []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, text = pem.Decode(text)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return certs, nil
}

// snsGet fetches u through the SNS client, at most snsMaxCertBytes. A
// failure of the moment (the network, a timeout, a 5xx or 429 answer) is
// a *TransientError.
func snsGet(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := snsClient().Do(req)
	if err != nil {
		return nil, Transient("the fetch failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return nil, Transient("the fetch answered %d", resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the fetch answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, snsMaxCertBytes+1))
	if err != nil {
		return nil, Transient("the fetch failed")
	}
	if len(body) > snsMaxCertBytes {
		return nil, fmt.Errorf("the file is larger than %d bytes", snsMaxCertBytes)
	}
	return body, nil
}

// snsIssuerHost is where Amazon's certificates say their issuers are
// (crt.r2m01.amazontrust.com, …).
func snsIssuerHost(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	return (u.Scheme == "http" || u.Scheme == "https") && u.User == nil && u.Port() == "" &&
		(host == "amazontrust.com" || strings.HasSuffix(host, ".amazontrust.com"))
}

// snsIssuers fetches the intermediate certificates leaf names (its
// authority information access), at most snsMaxIssuers, only from
// Amazon's trust hosts: the certificate file at SigningCertURL may hold
// the leaf alone, and Go does not fetch issuers itself. A fetched issuer
// is trusted only if it chains to a root. The error is the first fetch's
// that failed for a reason of the moment.
func snsIssuers(ctx context.Context, org string, leaf *x509.Certificate) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	var unsure error
	tried := 0
	for _, raw := range leaf.IssuingCertificateURL {
		u, err := url.Parse(raw)
		if err != nil || !snsIssuerHost(u) || tried == snsMaxIssuers {
			continue
		}
		tried++
		issuer, err := snsFetch.get(ctx, org, u.String(), func(body []byte) ([]*x509.Certificate, error) {
			if c, err := x509.ParseCertificate(body); err == nil {
				return []*x509.Certificate{c}, nil
			}
			return parseCertificates(body)
		})
		if err == nil {
			out = append(out, issuer.certs...)
		} else if unsure == nil && errors.As(err, new(*TransientError)) {
			unsure = err
		}
	}
	return out, unsure
}

// snsSigned is the text SNS signs for message m of type typ.
func snsSigned(m map[string]any, typ string) ([]byte, error) {
	var keys []string
	switch typ {
	case snsNotification:
		keys = []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	case snsSubscribe, snsUnsubscribe:
		keys = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	default:
		return nil, fmt.Errorf("type %q is no SNS message type", typ)
	}
	var b strings.Builder
	for _, k := range keys {
		v, present := m[k]
		s, isString := v.(string)
		if k == "Subject" && (!present || v == nil) {
			continue
		}
		if !isString {
			return nil, fmt.Errorf("%s is missing", k)
		}
		b.WriteString(k + "\n" + s + "\n")
	}
	return []byte(b.String()), nil
}

// snsConfig is a connection's settings, read once per call.
type snsConfig struct {
	pinned    []*x509.Certificate
	topics    []string
	typeAttr  string
	tolerance time.Duration // 0: no bound
}

func readSNSConfig(cfg Config) (snsConfig, error) {
	var c snsConfig
	pinned, err := stringSetting(cfg, "certificate")
	if err != nil {
		return c, err
	}
	if pinned != "" {
		if c.pinned, err = snsPinned.get(pinned, parseCertificates); err != nil {
			return c, fmt.Errorf("config certificate %v", err)
		}
		if strings.Contains(pinned, "PRIVATE KEY") {
			return c, errors.New("config certificate holds a private key; pin only the certificate")
		}
	}
	if v, ok := cfg["topic_arns"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return c, errors.New("config topic_arns: want a list of topic ARNs")
		}
		for _, item := range list {
			s, ok := item.(string)
			if !ok || !strings.HasPrefix(s, "arn:") {
				return c, errors.New("config topic_arns: want a list of topic ARNs")
			}
			c.topics = append(c.topics, s)
		}
	}
	if c.typeAttr, err = stringSetting(cfg, "type_attribute"); err != nil {
		return c, err
	}
	if _, ok := cfg["tolerance"]; ok {
		if c.tolerance, err = toleranceSetting(cfg, defaultTolerance); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (awsSNSAdapter) ValidateConfig(cfg Config) error {
	_, err := readSNSConfig(cfg)
	return err
}

// verifySNS checks m's signature and the connection's topics, fetching the
// certificate when none is pinned.
func verifySNS(ctx context.Context, org string, m map[string]any, receivedAt time.Time, c snsConfig) error {
	typ := str(m, "Type")
	signed, err := snsSigned(m, typ)
	if err != nil {
		return sigError("aws_sns: %v", err)
	}
	if len(c.topics) > 0 {
		topic, ok := str(m, "TopicArn"), false
		for _, t := range c.topics {
			ok = ok || t == topic
		}
		if !ok {
			return sigError("aws_sns: topic %q is not one the connection accepts", topic)
		}
	}
	var hash crypto.Hash
	switch str(m, "SignatureVersion") {
	case "1":
		hash = crypto.SHA1
	case "2":
		hash = crypto.SHA256
	default:
		return sigError("aws_sns: SignatureVersion is neither 1 nor 2")
	}
	sig, err := base64.StdEncoding.DecodeString(str(m, "Signature"))
	if err != nil || len(sig) == 0 {
		return sigError("aws_sns: Signature is not base64")
	}
	if c.tolerance > 0 {
		at, err := time.Parse(time.RFC3339Nano, str(m, "Timestamp"))
		if err != nil {
			return sigError("aws_sns: Timestamp is not RFC 3339")
		}
		if err := checkTime(at, receivedAt, c.tolerance, true); err != nil {
			return fmt.Errorf("aws_sns: %w", err)
		}
	}
	var digest []byte
	if hash == crypto.SHA1 {
		d := sha1.Sum(signed)
		digest = d[:]
	} else {
		d := sha256.Sum256(signed)
		digest = d[:]
	}
	keys, err := snsKeys(ctx, org, str(m, "SigningCertURL"), receivedAt, c)
	if err != nil {
		return err
	}
	for _, pub := range keys {
		if rsa.VerifyPKCS1v15(pub, hash, digest, sig) == nil {
			return nil
		}
	}
	return sigError("aws_sns: the signature does not verify under the signing certificate")
}

// snsKeys are the RSA keys that may have signed a message received at at:
// the pinned certificates' if any (never fetching), else the one at
// certURL, which must chain to a trusted root.
func snsKeys(ctx context.Context, org, certURL string, at time.Time, c snsConfig) ([]*rsa.PublicKey, error) {
	if at.IsZero() {
		at = keyClock.Now()
	}
	var keys []*rsa.PublicKey
	if len(c.pinned) > 0 {
		for _, cert := range c.pinned {
			if pub, ok := cert.PublicKey.(*rsa.PublicKey); ok && !at.Before(cert.NotBefore) && !at.After(cert.NotAfter) {
				keys = append(keys, pub)
			}
		}
		if len(keys) == 0 {
			return nil, sigError("aws_sns: no pinned certificate is an RSA certificate valid when the message was received")
		}
		return keys, nil
	}
	u, err := snsCertURL(certURL)
	if err != nil {
		return nil, sigError("aws_sns: SigningCertURL %v: refused as a forgery", err)
	}
	signer, err := snsFetch.get(ctx, org, u.String(), parseCertificates)
	if errors.As(err, new(*TransientError)) {
		return nil, Transient("aws_sns: the signing certificate at %s could not be read now: %v", u.Host+u.Path, err)
	} else if err != nil {
		return nil, sigError("aws_sns: the signing certificate at %s could not be read: %v", u.Host+u.Path, err)
	}
	if key := signer.keyAt(at); key != nil {
		return []*rsa.PublicKey{key}, nil
	}
	inter := x509.NewCertPool()
	for _, extra := range signer.certs[1:] {
		inter.AddCert(extra)
	}
	leaf := signer.certs[0]
	opts := x509.VerifyOptions{
		Roots: snsRoots, Intermediates: inter, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}
	chains, err := leaf.Verify(opts)
	if errors.As(err, new(x509.UnknownAuthorityError)) {
		issuers, unsure := snsIssuers(ctx, org, leaf)
		if len(issuers) > 0 {
			for _, c := range issuers {
				inter.AddCert(c)
			}
			chains, err = leaf.Verify(opts)
		}
		if err != nil && unsure != nil {
			return nil, Transient("aws_sns: the signing certificate's issuer could not be read now: %v", unsure)
		}
	}
	if err != nil {
		return nil, sigError("aws_sns: the signing certificate is not trusted when the message was received: %v", err)
	}
	pub, ok := leaf.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, sigError("aws_sns: the signing certificate holds no RSA key")
	}
	signer.verified(pub, chains[0])
	return []*rsa.PublicKey{pub}, nil
}

// snsEnvelope reads the body as an SNS JSON envelope.
func snsEnvelope(r *Request) (map[string]any, error) {
	if strings.EqualFold(headerValue(r.Header, "x-amz-sns-rawdelivery"), "true") {
		return nil, errors.New("raw message delivery carries no signature; turn it off for this subscription")
	}
	return decodeObject(r.Body)
}

func (awsSNSAdapter) Verify(r *Request, _ [][]byte, cfg Config) error {
	c, err := readSNSConfig(cfg)
	if err != nil {
		return configError("aws_sns", err)
	}
	m, err := snsEnvelope(r)
	if err != nil {
		return sigError("aws_sns: body is not an SNS message: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*snsFetchTimeout)
	defer cancel()
	return verifySNS(ctx, r.Org, m, r.ReceivedAt, c)
}

// Challenge confirms a subscription: when a SubscriptionConfirmation
// verifies (and names an accepted topic), it fetches the SubscribeURL, only
// on an SNS host, and answers 200. Any other request is an ordinary
// delivery; an unverified confirmation is stored and refused later.
func (awsSNSAdapter) Challenge(r *Request, _ [][]byte, cfg Config) (Challenge, bool) {
	if r.Method != http.MethodPost || headerValue(r.Header, "x-amz-sns-message-type") != snsSubscribe {
		return Challenge{}, false
	}
	c, err := readSNSConfig(cfg)
	if err != nil {
		return Challenge{}, false
	}
	m, err := snsEnvelope(r)
	if err != nil || str(m, "Type") != snsSubscribe {
		return Challenge{}, false
	}
	u, err := snsSubscribeURL(str(m, "SubscribeURL"))
	if err != nil {
		return Challenge{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*snsFetchTimeout)
	defer cancel()
	if verifySNS(ctx, r.Org, m, r.ReceivedAt, c) != nil {
		return Challenge{}, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Challenge{}, false
	}
	resp, err := snsClient().Do(req)
	if err != nil {
		return Challenge{Status: http.StatusServiceUnavailable, ContentType: "text/plain"}, true
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, snsMaxCertBytes))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// SNS sends the confirmation again when it is not answered 2xx.
		return Challenge{Status: http.StatusServiceUnavailable, ContentType: "text/plain"}, true
	}
	return Challenge{Status: http.StatusOK, ContentType: "text/plain"}, true
}

func (awsSNSAdapter) Interpret(r *Request, cfg Config) (Interpretation, error) {
	c, err := readSNSConfig(cfg)
	if err != nil {
		return Interpretation{}, configError("aws_sns", err)
	}
	m, err := snsEnvelope(r)
	if err != nil {
		return Interpretation{}, Permanent("aws_sns: body is not an SNS message: %v", err)
	}
	id := str(m, "MessageId")
	switch typ := str(m, "Type"); typ {
	case snsSubscribe, snsUnsubscribe:
		return Interpretation{ProviderEventID: id, EventType: "aws_sns." + snakeCase(typ), Kind: intake.KindEvent, Challenge: true}, nil
	case snsNotification:
	default:
		return Interpretation{}, Permanent("aws_sns: Type %q is no SNS message type", typeSegment(typ))
	}
	if id == "" {
		return Interpretation{}, Permanent("aws_sns: the notification has no MessageId")
	}
	kind := "notification"
	if c.typeAttr != "" {
		if v := str(m, "MessageAttributes", c.typeAttr, "Value"); v != "" {
			kind = typeSegment(v)
		}
	}
	spec := EventSpec{
		// SNS sends the same MessageId with every retry of a delivery.
		ProviderEventID: id,
		Type:            "aws_sns." + kind,
		Kind:            intake.KindEvent,
		OccurredAt:      unixTime(m["Timestamp"]),
	}
	spec.ObjectIDs = appendID(spec.ObjectIDs, str(m, "TopicArn"))
	spec.Data, spec.DataTruncated = eventData(r.Body)
	return single(spec), nil
}
