package provider

import (
	"errors"
	"net/http"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit/clock"
)

// wantTransient fails unless err says the request could not be judged now:
// neither a refusal nor permanent.
func wantTransient(t *testing.T, err error) {
	t.Helper()
	var tr *TransientError
	if !errors.As(err, &tr) || errors.Is(err, ErrSignature) {
		t.Fatalf("Verify: %v, want a TransientError", err)
	}
}

// fakeKeyClock makes the fetch budgets judge time by a clock the test
// moves.
func fakeKeyClock(t *testing.T) *clock.Clock {
	t.Helper()
	c := clock.New(received)
	keyClock = c
	t.Cleanup(func() { keyClock = intake.SystemClock{} })
	return c
}

// failWith answers status (0: fails the connection) while *failing, and
// passes requests on after.
func failWith(next http.RoundTripper, failing *bool, status int) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		switch {
		case !*failing:
			return next.RoundTrip(r)
		case status == 0:
			return nil, errors.New("connection reset by peer")
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
