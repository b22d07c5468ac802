package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsumerPageChartsFitAPhoneAndADesktop: a consumer whose call failed
// shows its charts and its Retry now button, and its event the button too;
// at a phone's width and a desktop's the charts and the buttons stay inside
// the page.
func TestConsumerPageChartsFitAPhoneAndADesktop(t *testing.T) {
	_, url := newRecordingConsumer(t, map[string][]int{"/down": {500}}, nil)
	s := start(t, t.TempDir())
	path := setupGitHub(t, s)
	var c struct {
		ID string `json:"id"`
	}
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": firstOrgID(t, s), "name": "down", "app": "down",
		"url": url + "/down", "event_types": []string{"github.issues.*"}, "retry": map[string]any{"attempts": 5, "base": "1h"}}, &c)
	if status, b := postGitHub(t, http.DefaultClient, s.url+path, "history-1"); status != http.StatusOK {
		t.Fatalf("ingress answered %d %s", status, b)
	}
	var eventID string
	eventually(t, 60*time.Second, "the event retrying", func() bool {
		evs := s.events(t)
		if len(evs) != 1 {
			return false
		}
		eventID = evs[0].ID
		return s.event(t, eventID).State == "retrying"
	})
	tab := browserTab(t)
	signIn(t, tab, s.url, staffToken, "header.top")
	shots := os.Getenv("INTAKE_SCREENSHOTS") // a directory to keep the pages' pictures in
	for _, width := range []int64{420, 1280} {
		step(t, tab, "open the consumer", chromedp.EmulateViewport(width, 900), chromedp.Navigate(s.url+"/console/consumers/"+c.ID),
			chromedp.WaitVisible(chromedp.CSS("#history svg.chart")), chromedp.WaitVisible(chromedp.CSS("#retry-now")))
		bad := read(t, tab, "measure", chromedp.Evaluate[[]string](`(() => {
			const bad = [];
			const page = document.documentElement.clientWidth;
			for (const svg of document.querySelectorAll("svg.chart")) {
				const r = svg.getBoundingClientRect();
				if (r.right > page + 1 || r.width < 100) bad.push(svg.getAttribute("aria-label") + ": " + r.left + "–" + r.right + " of " + page);
			}
			if (document.querySelectorAll("#history rect.dead").length === 0) bad.push("no failed call drawn");
			return bad;
		})()`))
		if len(bad) > 0 {
			t.Errorf("at %d px: %v", width, bad)
		}
		if shots != "" {
			png := read(t, tab, "screenshot", chromedp.FullScreenshot(100))
			os.WriteFile(filepath.Join(shots, "consumer-"+strconv.FormatInt(width, 10)+".png"), png, 0o644)
		}
		step(t, tab, "open the event", chromedp.Navigate(s.url+"/console/events/"+eventID), chromedp.WaitVisible(chromedp.CSS("#retry-now")))
		if out := read(t, tab, "measure the button", chromedp.Evaluate[bool](`document.querySelector("#retry-now").getBoundingClientRect().right <= document.documentElement.clientWidth`)); !out {
			t.Errorf("at %d px the event's Retry now button lies outside the page", width)
		}
		if shots != "" {
			png := read(t, tab, "screenshot", chromedp.FullScreenshot(100))
			os.WriteFile(filepath.Join(shots, "event-retry-"+strconv.FormatInt(width, 10)+".png"), png, 0o644)
		}
	}
}
