package intake_test

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func TestEndpointRotationKeepsAtMostTwoTokensLive(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b, c := []byte("a"), []byte("b"), []byte("c")
	e := intake.Endpoint{TokenHash: a}
	e, err := e.RotateToken(b, nil, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		e    intake.Endpoint
		hash []byte
		at   time.Time
		want bool
	}{
		{"new token", e, b, now, true},
		{"old token within the overlap", e, a, now.Add(time.Hour - time.Nanosecond), true},
		{"old token at the overlap's end", e, a, now.Add(time.Hour), false},
		{"unknown token", e, c, now, false},
		{"no rotation yet, empty hash", intake.Endpoint{TokenHash: a}, nil, now, false},
	}
	for _, tc := range cases {
		if got := tc.e.AddressedBy(tc.hash, tc.at); got != tc.want {
			t.Errorf("%s: AddressedBy = %v, want %v", tc.name, got, tc.want)
		}
	}

	again, err := e.RotateToken(c, nil, now.Add(time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if again.AddressedBy(a, now.Add(time.Minute)) {
		t.Error("the oldest token still works after a second rotation within its overlap")
	}
	if !again.AddressedBy(b, now.Add(time.Minute+time.Hour-time.Nanosecond)) || !again.AddressedBy(c, now) {
		t.Error("the token just replaced lost its own overlap, or the new one does not work")
	}

	zero, err := e.RotateToken(c, nil, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if zero.AddressedBy(b, now) {
		t.Error("overlap 0: the replaced token still works")
	}
}

func TestEndpointRotationRefusesAnOverlapOutOfBounds(t *testing.T) {
	e := intake.Endpoint{TokenHash: []byte("a")}
	for _, d := range []time.Duration{-time.Second, intake.MaxTokenOverlap + time.Second} {
		if _, err := e.RotateToken([]byte("b"), nil, time.Now(), d); intake.ErrorCode(err) != intake.EINVALID {
			t.Errorf("overlap %s: err = %v, want EINVALID", d, err)
		}
	}
	if _, err := e.RotateToken([]byte("b"), nil, time.Now(), intake.MaxTokenOverlap); err != nil {
		t.Errorf("overlap 168h: %v", err)
	}
}
