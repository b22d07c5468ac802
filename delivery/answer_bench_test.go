package delivery

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkPostSmallAnswer is one call to a consumer that answers a small
// JSON body, as most do: what keeping the answer adds to each call.
func BenchmarkPostSmallAnswer(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"received":true,"id":"evt_1"}`)
	}))
	defer srv.Close()
	s := NewSender(Options{Policy: DefaultPolicy(), Timeout: 5 * time.Second})
	body := []byte(`{"id":"evt_1","type":"stripe.invoice.paid","data":{}}`)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := s.Post(context.Background(), srv.URL, body, nil, now); r.StatusCode != 200 {
			b.Fatalf("%+v", r)
		}
	}
}
