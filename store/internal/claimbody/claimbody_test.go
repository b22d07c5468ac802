package claimbody

import (
	"testing"
	"time"

	"github.com/intakehq/intake"
)

func TestBodiesLeaveAMessageWithoutABodyExpired(t *testing.T) {
	claims := []intake.Claim{{Message: intake.Message{ID: "a"}}, {Message: intake.Message{ID: "b"}}, {Message: intake.Message{ID: "c"}}}
	b := New(claims)
	if err := b.Fill("a", []byte(`{"X-Test":["1"]}`), []byte("body"), ""); err != nil {
		t.Fatal(err)
	}
	key := intake.BlobKey(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), "c")
	if err := b.Fill("c", []byte(`{}`), nil, key); err != nil {
		t.Fatal(err)
	}
	if m := claims[0].Message; m.BodyExpired || string(m.Body) != "body" || m.BlobKey != "" || m.Header.Get("X-Test") != "1" {
		t.Fatalf("filled = %+v", m)
	}
	if !claims[1].Message.BodyExpired {
		t.Fatal("a message whose body was not found is not marked expired")
	}
	if m := claims[2].Message; m.BodyExpired || m.Body != nil || m.BlobKey != "bodies/2026/11/30/12/c" {
		t.Fatalf("a body in object storage filled as %+v, want its key", m)
	}
}
