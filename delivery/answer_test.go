package delivery

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/testkit"
)

// post sends one call to h and returns its result with the bytes read from
// the call's connection.
func post(t *testing.T, h http.HandlerFunc) (Result, int64) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := NewSender(Options{Policy: DefaultPolicy(), Timeout: 5 * time.Second})
	var conn *counted
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		conn, _ = info.Conn.(*counted)
	}})
	r := s.Post(ctx, srv.URL, []byte(`{}`), nil, time.Now())
	if conn == nil {
		t.Fatal("the call's connection was not the policy's")
	}
	return r, conn.read.Load()
}

func TestAnHTTPAnswerIsKeptAsText(t *testing.T) {
	r, _ := post(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(500)
		io.WriteString(w, `{"error":"boom"}`)
	})
	got := r.Response
	if r.Outcome != intake.DeliveryRetry || got == nil {
		t.Fatalf("result %+v, want a retry with the answer", r)
	}
	if got.Status != 500 || got.Body != `{"error":"boom"}` || got.BodyEncoding != "text" || got.BodyTruncated ||
		len(got.Headers) != 2 || got.Headers["content-type"] != "application/json" || got.Headers["retry-after"] != "30" {
		t.Fatalf("kept %+v", got)
	}
}

func TestAnAnswerWithoutBodyOrHeadersKeepsItsStatus(t *testing.T) {
	r, _ := post(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
	if got := r.Response; got == nil || got.Status != 204 || got.Body != "" || got.BodyEncoding != "text" || got.BodyTruncated || len(got.Headers) != 0 {
		t.Fatalf("kept %+v", got)
	}
}

// A 10 MiB answer: its first 4 KiB are kept, and the call reads a bounded
// part of it, never the whole.
func TestA10MiBAnswerKeeps4KiBAndIsNeverReadWhole(t *testing.T) {
	written := make(chan int64, 1)
	r, read := post(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(502)
		chunk := []byte(strings.Repeat("é", 512)) // 1 KiB of two-byte characters
		var n int64
		for range 10 << 10 {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	})
	got := r.Response
	if got == nil || got.Status != 502 || !got.BodyTruncated || got.BodyEncoding != "text" || len(got.Body) != intake.MaxResponseBody {
		t.Fatalf("kept %d bytes of %q, truncated %v: %+v", len(got.Body), got.BodyEncoding, got.BodyTruncated, r)
	}
	if limit := int64(128 << 10); read > limit {
		t.Fatalf("read %d bytes of a 10 MiB answer, want at most %d", read, limit)
	}
	t.Logf("read %d bytes of the answer; the server wrote %d before the connection closed", read, <-written)
}

// A body cut inside a character is still text: the cut character is left
// out.
func TestATruncatedTextAnswerLeavesOutTheCharacterItCuts(t *testing.T) {
	r, _ := post(t, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "x"+strings.Repeat("é", intake.MaxResponseBody))
	})
	got := r.Response
	if got.BodyEncoding != "text" || !got.BodyTruncated || len(got.Body) != intake.MaxResponseBody-1 || !strings.HasPrefix(got.Body, "xé") {
		t.Fatalf("kept %d bytes as %s, truncated %v", len(got.Body), got.BodyEncoding, got.BodyTruncated)
	}
}

func TestCredentialHeadersOfAnAnswerAreNeverKept(t *testing.T) {
	r, _ := post(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Authorization", "Bearer "+testkit.Marker)
		w.Header().Set("Set-Cookie", "session="+testkit.Marker)
		w.Header().Set("X-Api-Key", testkit.Marker)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(401)
		io.WriteString(w, "no")
	})
	got := r.Response
	if got == nil || len(got.Headers) != 1 || got.Headers["content-type"] != "text/plain" {
		t.Fatalf("kept headers %v, want content-type alone", got.Headers)
	}
}

func TestABinaryAnswerIsKeptAsBase64(t *testing.T) {
	body := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
	r, _ := post(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(body)
	})
	got := r.Response
	if got == nil || got.BodyEncoding != "base64" || got.Body != base64.StdEncoding.EncodeToString(body) || got.BodyTruncated {
		t.Fatalf("kept %+v", got)
	}
	if r.Outcome != intake.DeliveryHandled {
		t.Fatalf("outcome %s", r.Outcome)
	}
	// Valid UTF-8 that holds a NUL is not text either.
	r, _ = post(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\x00") })
	if got := r.Response; got.BodyEncoding != "base64" || got.Body != base64.StdEncoding.EncodeToString([]byte("ok\x00")) {
		t.Fatalf("kept %+v", got)
	}
}

// An answer of exactly 4 KiB is kept whole, not truncated.
func TestAnAnswerOfExactly4KiBIsKeptWhole(t *testing.T) {
	body := strings.Repeat("a", intake.MaxResponseBody)
	r, _ := post(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })
	if got := r.Response; got.Body != body || got.BodyTruncated {
		t.Fatalf("kept %d bytes, truncated %v", len(got.Body), got.BodyTruncated)
	}
}
