package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// TestConsoleShowsAnAnswerInsideItsPanel: on the event page, at a phone's
// width and a desktop's, a delivery's answer opens from its summary and
// its body (a 3 KiB line without a space, then more lines) stays inside
// its panel: the page never widens.
func TestConsoleShowsAnAnswerInsideItsPanel(t *testing.T) {
	long := `{"error":"` + strings.Repeat("x", 3<<10) + "\"}\n" + `{"trace":["line two","line three"]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, long)
	}))
	t.Cleanup(srv.Close)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": "wide", "app": "wide",
		"url": srv.URL + "/hooks", "event_types": []string{"github.issues.*"}, "retry": map[string]any{"attempts": 1}}, nil)
	if status, b := postGitHub(t, http.DefaultClient, s.url+path, "answers-e2e-2"); status != http.StatusOK {
		t.Fatalf("ingress answered %d %s", status, b)
	}
	var id string
	eventually(t, 60*time.Second, "the event dead", func() bool {
		evs := s.events(t)
		if len(evs) == 1 && evs[0].State == "dead" {
			id = evs[0].ID
		}
		return id != ""
	})
	tab := browserTab(t)
	signIn(t, tab, s.url, staffToken, "header.top")
	for _, width := range []int64{420, 1280} {
		step(t, tab, "open the event", chromedp.EmulateViewport(width, 900), chromedp.Navigate(s.url+"/console/events/"+id),
			chromedp.WaitVisible(chromedp.CSS("details.answer summary")), chromedp.Click(chromedp.CSS("details.answer summary")),
			chromedp.WaitVisible(chromedp.CSS("pre.answer-body")))
		bad := read(t, tab, "measure", chromedp.Evaluate[[]string](`(() => {
			const bad = [];
			const doc = document.documentElement;
			if (doc.scrollWidth > doc.clientWidth) bad.push("the page is " + doc.scrollWidth + " px wide in a " + doc.clientWidth + " px window");
			const pre = document.querySelector("pre.answer-body");
			const panel = pre.closest(".panel").getBoundingClientRect();
			const r = pre.getBoundingClientRect();
			if (r.right > panel.right + 0.5) bad.push("the answer's body ends at " + r.right + ", past its panel's " + panel.right);
			if (pre.scrollHeight > pre.clientHeight && getComputedStyle(pre).overflowY !== "auto") bad.push("a long body does not scroll");
			if (!pre.textContent.includes("line three")) bad.push("the body lacks its last line");
			return bad;
		})()`))
		if len(bad) > 0 {
			t.Errorf("at %d px: %v", width, bad)
		}
		if dir := os.Getenv("INTAKE_E2E_SCREENSHOTS"); dir != "" {
			png := read(t, tab, "screenshot", chromedp.FullScreenshot(100))
			os.WriteFile(filepath.Join(dir, "event-answer-"+strconv.FormatInt(width, 10)+".png"), png, 0o644)
		}
	}
}
