package testkit

import (
	"context"
	"crypto/rand"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/intakehq/intake/blob"
)

// S3Bucket is the bucket every test shares on the test server; each test
// writes under a key prefix of its own.
const S3Bucket = "intake-test"

var s3Credentials sync.Once

// S3Endpoint is the S3-compatible server the tests of the blob store use:
// INTAKE_TEST_S3 (default http://127.0.0.1:8333, SeaweedFS as .ci/run
// starts it). A test fails under CI=true when it cannot be reached, and is
// skipped elsewhere. Without AWS credentials in the environment, test
// ones are set: the server checks none.
func S3Endpoint(t testing.TB) string {
	t.Helper()
	endpoint := os.Getenv("INTAKE_TEST_S3")
	if endpoint == "" {
		endpoint = "http://127.0.0.1:8333"
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		t.Fatalf("INTAKE_TEST_S3 = %q: want http://host:port", endpoint)
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the S3-compatible server at %s is not reachable and CI=true, so this fails rather than skips: %v", endpoint, err)
		}
		t.Skipf("the S3-compatible server at %s is not reachable (set INTAKE_TEST_S3, or start SeaweedFS): %v", endpoint, err)
	}
	c.Close()
	s3Credentials.Do(func() {
		for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "intake-test", "AWS_SECRET_ACCESS_KEY": "intake-test"} {
			if os.Getenv(k) == "" {
				os.Setenv(k, v)
			}
		}
	})
	return endpoint
}

// S3URL is the --blob-store URL of a fresh key prefix in the test bucket
// at endpoint (made if missing); the prefix's objects are deleted when
// the test ends.
func S3URL(t testing.TB, endpoint string) string {
	t.Helper()
	prefix := "t-" + strings.ToLower(rand.Text()[:12])
	u := "s3://" + S3Bucket + "/" + prefix + "?region=us-east-1&endpoint=" + url.QueryEscape(endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := blob.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureBucket(ctx); err != nil {
		t.Fatalf("make the test bucket at %s: %v", endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		objs, err := b.List(ctx, "", "\xff", 10000)
		keys := make([]string, len(objs))
		for i, o := range objs {
			keys[i] = o.Key
		}
		if err == nil {
			err = b.Delete(ctx, keys)
		}
		if err != nil {
			t.Logf("delete the test's objects under %s: %v", prefix, err)
		}
	})
	return u
}

// S3 is a blob store on a fresh key prefix of the test server.
func S3(t testing.TB) *blob.S3 {
	t.Helper()
	b, err := blob.Open(context.Background(), S3URL(t, S3Endpoint(t)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
