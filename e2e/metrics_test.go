package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches /metrics and parses it.
func (s *server) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// value returns the value of the sample of family name whose labels include
// every label given, or 0 when there is none.
func value(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// TestMetricsFollowAKnownSequenceOfWebhooks sends three good webhooks, a
// repeat, a forged one and one to an unknown token, and reads the counters
// and gauges back from /metrics.
func TestMetricsFollowAKnownSequenceOfWebhooks(t *testing.T) {
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer consumer.Close()
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var orgs struct{ Items []struct{ ID string } }
	s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "c", "app": "c",
		"url": consumer.URL, "event_types": []string{"github.*"}}, nil)

	post := func(req *http.Request) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for i := range 3 {
		post(githubDelivery(s.url+path, fmt.Sprintf("m-%d", i)))
	}
	post(githubDelivery(s.url+path, "m-0")) // the provider retries
	forged := githubDelivery(s.url+path, "m-9")
	forged.Header.Set("X-Hub-Signature-256", "sha256=00")
	post(forged)
	post(githubDelivery(s.url+"/webhooks/not-a-token", "m-x"))

	// Counters move just after the commits they count, so one scrape can
	// come between the two: poll until every figure holds, with a deadline.
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"intake_messages", []string{"state", "processed"}, 3},
		{"intake_messages", []string{"state", "ignored"}, 2},
		{"intake_events", []string{"provider", "github", "state", "delivered"}, 3},
		{"intake_ingress_requests_total", []string{"result", "accepted"}, 5},
		{"intake_ingress_requests_total", []string{"result", "unknown_endpoint"}, 1},
		{"intake_messages_settled_total", []string{"state", "processed", "outcome", "events"}, 3},
		{"intake_messages_settled_total", []string{"state", "ignored", "outcome", "duplicate"}, 1},
		{"intake_messages_settled_total", []string{"state", "ignored", "outcome", "signature"}, 1},
		{"intake_events_created_total", nil, 3},
		{"intake_deliveries_total", []string{"outcome", "handled"}, 3},
		{"intake_end_to_end_seconds", nil, 3},
		{"intake_ingest_commit_seconds", nil, 5},
		{"intake_messages", []string{"state", "queued"}, 0},
		{"intake_oldest_due_message_age_seconds", nil, 0},
		{"intake_store_up", nil, 1},
	}
	var wrong []string
	defer func() {
		if t.Failed() {
			t.Logf("last scrape differs: %s", strings.Join(wrong, "; "))
		}
	}()
	eventually(t, 30*time.Second, "every figure of /metrics matches the webhooks sent", func() bool {
		f := s.scrape(t)
		wrong = wrong[:0]
		for _, c := range checks {
			if got := value(f, c.name, c.labels...); got != c.want {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v, want %v", c.name, c.labels, got, c.want))
			}
		}
		return len(wrong) == 0
	})
}

// TestMetricsNameNoConsumerUnlessAskedToCountPerConsumer: a consumer's id
// reaches /metrics only with --metrics-per-consumer; without it its calls
// count in the aggregate alone.
func TestMetricsNameNoConsumerUnlessAskedToCountPerConsumer(t *testing.T) {
	consumer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer consumer.Close()
	deliverOne := func(s *server) (consumerID string, body string) {
		t.Helper()
		path := setupGitHub(t, s)
		var orgs struct{ Items []struct{ ID string } }
		s.api(t, "GET", "/api/v1/orgs", nil, &orgs)
		var cons struct{ ID string }
		s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": orgs.Items[0].ID, "name": "c", "app": "c",
			"url": consumer.URL, "event_types": []string{"github.*"}}, &cons)
		resp, err := http.DefaultClient.Do(githubDelivery(s.url+path, "m-1"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		eventually(t, 30*time.Second, "the consumer handled the event", func() bool {
			_, body = get(t, s.url+"/metrics")
			return strings.Contains(body, `intake_deliveries_total{outcome="handled"} 1`)
		})
		return cons.ID, body
	}

	id, body := deliverOne(start(t, t.TempDir()))
	if strings.Contains(body, id) || strings.Contains(body, "consumer_id") {
		t.Fatalf("by default /metrics names consumer %s:\n%s", id, body)
	}

	id, body = deliverOne(start(t, t.TempDir(), "--metrics-per-consumer"))
	if want := `intake_consumer_deliveries_total{consumer_id="` + id + `",outcome="handled"} 1`; !strings.Contains(body, want) {
		t.Fatalf("with --metrics-per-consumer, want %s in:\n%s", want, body)
	}
}
