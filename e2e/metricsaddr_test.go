package e2e

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// freeAddr is a loopback address no one listens on, for a flag that cannot
// take port 0 and report what it got.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsOnAnAddressOfTheirOwnLeaveTheMainAddress: with --metrics-addr
// the scraper reads /metrics there, and the address providers reach no
// longer answers it.
func TestMetricsOnAnAddressOfTheirOwnLeaveTheMainAddress(t *testing.T) {
	metrics := freeAddr(t)
	s := start(t, t.TempDir(), "--metrics-addr", metrics)
	if code, body := get(t, "http://"+metrics+"/metrics"); code != 200 || !strings.Contains(body, "intake_") {
		t.Fatalf("GET /metrics on --metrics-addr: %d %.200s", code, body)
	}
	if code, _ := get(t, s.url+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("GET /metrics on --addr: %d, want 404", code)
	}
	if code, _ := get(t, s.url+"/healthz"); code != 200 {
		t.Fatalf("GET /healthz on --addr: %d", code)
	}
}

// TestMetricsStayOnTheMainAddressByDefault: without --metrics-addr nothing
// moves.
func TestMetricsStayOnTheMainAddressByDefault(t *testing.T) {
	s := start(t, t.TempDir())
	if code, body := get(t, s.url+"/metrics"); code != 200 || !strings.Contains(body, "intake_") {
		t.Fatalf("GET /metrics: %d %.200s", code, body)
	}
}

// TestAnOrgsRetentionAboveTheServersIsRefused: the server keeps rows for
// --retention; an org may not ask it to keep its own for longer.
func TestAnOrgsRetentionAboveTheServersIsRefused(t *testing.T) {
	s := start(t, t.TempDir(), "--retention", "720h")
	var org struct {
		ID     string
		APIKey string `json:"api_key"`
	}
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": "acme"}, &org)
	req, _ := http.NewRequest("PATCH", s.url+"/api/v1/orgs/"+org.ID, bytes.NewReader([]byte(`{"retention": "9600h"}`)))
	req.Header.Set("Authorization", "Bearer "+org.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "720h") {
		t.Fatalf("PATCH retention 9600h by the org's key: %d %s, want 400 naming 720h", resp.StatusCode, b)
	}
}

// TestMetricsAnswerOnlyTheBearerOfTheMetricsToken: with INTAKE_METRICS_TOKEN
// set, a scrape without it is refused and one with it served.
func TestMetricsAnswerOnlyTheBearerOfTheMetricsToken(t *testing.T) {
	s := launch(t, []string{"INTAKE_METRICS_TOKEN=e2e-metrics-token"}, t.TempDir())
	s.waitServing(t)
	scrape := func(auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.url+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Bearer wrong"} {
		if code, body := scrape(auth); code != http.StatusUnauthorized || strings.Contains(body, "intake_") {
			t.Fatalf("Authorization %q: %d %.200s, want 401", auth, code, body)
		}
	}
	if code, body := scrape("Bearer e2e-metrics-token"); code != http.StatusOK || !strings.Contains(body, "intake_") {
		t.Fatalf("with the token: %d %.200s", code, body)
	}
}
