package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// answeredDetail is an event's deliveries with the answers kept.
type answeredDetail struct {
	State      string `json:"state"`
	Deliveries []struct {
		Attempt     int    `json:"attempt"`
		MaxAttempts int    `json:"max_attempts"`
		Outcome     string `json:"outcome"`
		Response    *struct {
			Status        int               `json:"status"`
			Headers       map[string]string `json:"headers"`
			Body          string            `json:"body"`
			BodyEncoding  string            `json:"body_encoding"`
			BodyTruncated bool              `json:"body_truncated"`
		} `json:"response"`
	} `json:"deliveries"`
}

// TestAConsumersAnswerIsKeptAndItsAttemptsStayAsTheyWere has a consumer
// answer every call 500 {"error":"boom"} (with a cookie, which is not
// kept) until its two attempts are spent: each delivery read through the
// API carries the answer and "of 2"; raising the consumer's retry
// afterwards leaves them as they were.
func TestAConsumersAnswerIsKeptAndItsAttemptsStayAsTheyWere(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=s3cr3t")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":"boom"}`)
	}))
	t.Cleanup(srv.Close)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var cons struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": "boom", "app": "boom",
		"url": srv.URL + "/hooks", "event_types": []string{"github.issues.*"}, "retry": map[string]any{"attempts": 2}}, &cons)
	if status, b := postGitHub(t, http.DefaultClient, s.url+path, "answers-e2e-1"); status != http.StatusOK {
		t.Fatalf("ingress answered %d %s", status, b)
	}
	var id string
	var d answeredDetail
	eventually(t, 60*time.Second, "the event dead after two failed calls", func() bool {
		evs := s.events(t)
		if len(evs) != 1 {
			return false
		}
		id = evs[0].ID
		s.api(t, "GET", "/api/v1/events/"+id, nil, &d)
		return d.State == "dead"
	})
	check := func(when string) {
		t.Helper()
		if len(d.Deliveries) != 2 {
			t.Fatalf("%s: deliveries %+v, want two", when, d.Deliveries)
		}
		for i, del := range d.Deliveries {
			if del.Attempt != i+1 || del.MaxAttempts != 2 {
				t.Errorf("%s: delivery %d reads %d of %d, want %d of 2", when, i, del.Attempt, del.MaxAttempts, i+1)
			}
			r := del.Response
			if r == nil {
				t.Fatalf("%s: delivery %d kept no answer", when, i)
			}
			if r.Status != 500 || r.Body != `{"error":"boom"}` || r.BodyEncoding != "text" || r.BodyTruncated ||
				len(r.Headers) != 1 || r.Headers["content-type"] != "application/json" {
				t.Errorf("%s: delivery %d kept %+v, want the 500, its JSON body and content-type alone", when, i, *r)
			}
		}
		if d.Deliveries[1].Outcome != "dead" {
			t.Errorf("%s: the last call is %s, want dead", when, d.Deliveries[1].Outcome)
		}
	}
	check("when it died")

	s.api(t, "PATCH", "/api/v1/consumers/"+cons.ID, map[string]any{"retry": map[string]any{"attempts": 6}}, nil)
	s.api(t, "GET", "/api/v1/events/"+id, nil, &d)
	check("after the consumer's retry was raised")
}
