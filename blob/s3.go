// Package blob keeps the request bodies too large for the database in
// S3-compatible object storage (intake.Blobs), and, for tests, in memory.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
)

// S3 keeps bodies in one bucket of an S3-compatible store, under a key
// prefix when the bucket is shared.
type S3 struct {
	client *s3.Client
	bucket string
	prefix string // "" or "PREFIX/"
}

// S3Location is where an s3:// URL points: a bucket, a key prefix in it
// and the server that holds it.
type S3Location struct {
	Bucket string
	Prefix string // no slash at either end; "" for the whole bucket
	Region string // us-east-1 unless the URL names one
	// Endpoint is the server's http(s) URL; "" for AWS itself.
	Endpoint string
}

// ParseS3URL reads s3://BUCKET[/PREFIX]?endpoint=http://host:port&region=REGION,
// the form --blob-store and --replicate share. Credentials never go in
// the URL.
func ParseS3URL(u string) (S3Location, error) {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "s3" || p.Host == "" || p.User != nil {
		return S3Location{}, fmt.Errorf("%q: want s3://BUCKET[/PREFIX]?endpoint=…&region=…", redact.URL(u))
	}
	q := p.Query()
	loc := S3Location{Bucket: p.Host, Prefix: strings.Trim(p.Path, "/"), Region: q.Get("region"), Endpoint: q.Get("endpoint")}
	if loc.Region == "" {
		loc.Region = "us-east-1"
	}
	if loc.Endpoint != "" {
		if e, err := url.Parse(loc.Endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return S3Location{}, fmt.Errorf("endpoint %q: want http://host:port or https://host:port", loc.Endpoint)
		}
	}
	return loc, nil
}

// Open connects to the bucket that u names (ParseS3URL); with a PREFIX
// every key intake writes begins with it. Credentials come
// from the standard AWS variables (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the shared files; the
// instance metadata service is never asked. Open makes no request.
func Open(ctx context.Context, u string) (*S3, error) {
	loc, err := ParseS3URL(u)
	if err != nil {
		return nil, fmt.Errorf("blob store %w", err)
	}
	prefix, region, endpoint := loc.Prefix, loc.Region, loc.Endpoint
	if prefix != "" {
		prefix += "/"
	}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(region),
		// S3-compatible stores refuse the CRC32 checksums the SDK sends
		// by default; checksums only where an operation requires one.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
		// Object storage that does not answer fails a request soon: a
		// large body is then refused, and the provider retries.
		config.WithHTTPClient(awshttp.NewBuildableClient().
			WithDialerOptions(func(d *net.Dialer) { d.Timeout = 3 * time.Second }).
			WithTransportOptions(func(tr *http.Transport) {
				tr.MaxIdleConnsPerHost = 64
				tr.TLSHandshakeTimeout = 5 * time.Second
				tr.ResponseHeaderTimeout = 30 * time.Second
			})),
	)
	if err != nil {
		return nil, fmt.Errorf("blob store: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
	return &S3{client: client, bucket: loc.Bucket, prefix: prefix}, nil
}

// EnsureBucket creates the bucket unless it exists.
func (b *S3) EnsureBucket(ctx context.Context) error {
	_, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b.bucket})
	if err == nil {
		return nil
	}
	var nf *types.NotFound
	if !errors.As(err, &nf) {
		return unavailable(err)
	}
	_, err = b.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b.bucket})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return unavailable(err)
	}
	return nil
}

// Put streams body into the object under key. A body of unknown size is
// spooled to a temporary file first: S3 needs the length up front.
func (b *S3) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if size < 0 {
		f, n, err := spool(body)
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		body, size = f, n
	}
	// The body is streamed as it arrives, unsigned (it cannot be read
	// twice to hash it first) and without retries (nor to send it again);
	// sticky remembers the body's own error, which the SDK wraps.
	r := &sticky{r: body}
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + key), Body: r, ContentLength: aws.Int64(size),
		ContentType: aws.String("application/octet-stream")},
		s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware),
		func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if r.err != nil {
		return r.err
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// spool copies a body of unknown length to a temporary file.
func spool(body io.Reader) (*os.File, int64, error) {
	f, err := os.CreateTemp("", "intake-body-*")
	if err != nil {
		return nil, 0, err
	}
	r := &sticky{r: body}
	n, err := io.Copy(f, r)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		if r.err != nil {
			return nil, 0, r.err
		}
		return nil, 0, err
	}
	return f, n, nil
}

// sticky keeps the first error other than EOF its reader returned.
type sticky struct {
	r   io.Reader
	err error
}

func (s *sticky) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Open streams the object under key.
func (b *S3) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + key)})
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return nil, 0, intake.Errorf(intake.ENOTFOUND, "no object %s", key)
	}
	if err != nil {
		return nil, 0, unavailable(err)
	}
	return out.Body, aws.ToInt64(out.ContentLength), nil
}

// Delete deletes the objects one by one: DeleteObjects requires a
// checksum header that S3-compatible stores disagree on.
func (b *S3) Delete(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + k)}); err != nil {
			var nsk *types.NoSuchKey
			if !errors.As(err, &nsk) {
				return unavailable(err)
			}
		}
	}
	return nil
}

// List lists objects whose keys sort after after and before before.
func (b *S3) List(ctx context.Context, after, before string, limit int) ([]intake.BlobObject, error) {
	in := &s3.ListObjectsV2Input{Bucket: &b.bucket, MaxKeys: aws.Int32(int32(min(limit, 1000)))}
	if b.prefix != "" {
		in.Prefix = aws.String(b.prefix)
	}
	if after != "" {
		in.StartAfter = aws.String(b.prefix + after)
	}
	var out []intake.BlobObject
	p := s3.NewListObjectsV2Paginator(b.client, in)
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, unavailable(err)
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), b.prefix)
			if k >= before || len(out) == limit {
				return out, nil
			}
			out = append(out, intake.BlobObject{Key: k, Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

// unavailable marks a failure to reach object storage.
func unavailable(err error) error {
	return &intake.Error{Code: intake.EUNAVAILABLE, Message: "object storage is unavailable; try again shortly", Err: err}
}
