package blob

import (
	"context"
	"errors"
	"io"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/outage"
)

// Watched is b with the outcome of each call reported to w: one that
// found object storage unreachable (EUNAVAILABLE) as a failure, one it
// answered as a success. An outage of object storage is then logged when
// it begins and ends, and what fails because of it (every large body
// refused) once per kind, not once per body.
func Watched(b intake.Blobs, w *outage.Watch) intake.Blobs { return &watched{b: b, w: w} }

type watched struct {
	b intake.Blobs
	w *outage.Watch
}

// report tells the watch what err says of object storage. A call given
// up by its caller (a provider gone, a shutdown) says nothing of it.
func (s *watched) report(ctx context.Context, err error) {
	switch {
	case err == nil:
		s.w.Reached()
	case intake.ErrorCode(err) == intake.EUNAVAILABLE && !errors.Is(context.Cause(ctx), context.Canceled):
		s.w.Failed(err)
	}
}

func (s *watched) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	err := s.b.Put(ctx, key, body, size)
	s.report(ctx, err)
	return err
}

func (s *watched) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	r, n, err := s.b.Open(ctx, key)
	if intake.ErrorCode(err) == intake.ENOTFOUND {
		s.report(ctx, nil) // an answer all the same
	} else {
		s.report(ctx, err)
	}
	return r, n, err
}

func (s *watched) Delete(ctx context.Context, keys []string) error {
	err := s.b.Delete(ctx, keys)
	s.report(ctx, err)
	return err
}

func (s *watched) List(ctx context.Context, after, before string, limit int) ([]intake.BlobObject, error) {
	objs, err := s.b.List(ctx, after, before, limit)
	s.report(ctx, err)
	return objs, err
}
