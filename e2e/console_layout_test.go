package e2e

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleNavNeverCoversThePageHeading: at a phone's width and a
// desktop's, the bar with the navigation ends above the page's heading and
// every nav link lies inside the bar.
func TestConsoleNavNeverCoversThePageHeading(t *testing.T) {
	s := start(t, t.TempDir())
	tab := browserTab(t)
	signIn(t, tab, s.url, staffToken, "header.top")
	for _, width := range []int64{420, 1200} {
		for _, path := range []string{"/console/", "/console/messages", "/console/connections"} {
			step(t, tab, "open "+path, chromedp.EmulateViewport(width, 900), chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
			overlap := read(t, tab, "measure", chromedp.Evaluate[[]string](`(() => {
				const bar = document.querySelector("header.top").getBoundingClientRect();
				const h1 = document.querySelector("main h1").getBoundingClientRect();
				const bad = [];
				if (bar.bottom > h1.top) bad.push("the bar ends at " + bar.bottom + ", the heading starts at " + h1.top);
				for (const a of document.querySelectorAll("header.top nav a")) {
					const r = a.getBoundingClientRect();
					if (r.top < bar.top || r.bottom > bar.bottom) bad.push(a.textContent + " lies outside the bar (" + r.top + "–" + r.bottom + ")");
					if (r.right > document.documentElement.clientWidth) bad.push(a.textContent + " is cut off on the right");
				}
				return bad;
			})()`))
			if len(overlap) > 0 {
				t.Errorf("%s at %d px: %v", path, width, overlap)
			}
		}
	}
}

// TestConsolePagesFitAPhoneAndADesktop: at 420 px no page of the console
// is wider than the window (a wide table scrolls inside its panel), and at
// 1280 px the navigation is one row, on every page an operator walks
// during an incident, with rows in its lists.
func TestConsolePagesFitAPhoneAndADesktop(t *testing.T) {
	s := start(t, t.TempDir())
	acme := setupStripeOrg(t, s, "acme")
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		_, _ = w.Write([]byte(`{"error":"boom: the order service could not reach its database at db-primary.internal.example.com:5432"}`))
	}))
	defer failing.Close()
	var consumer struct{ ID string }
	s.api(t, "POST", "/api/v1/consumers", map[string]any{"org_id": acme.id, "name": "orders-with-a-rather-long-name", "app": "orders",
		"url": failing.URL + "/hooks/a/rather/long/path/that/a/table/shows/whole", "event_types": []string{"stripe.*"}}, &consumer)
	var conns struct {
		Items []struct{ ID string } `json:"items"`
	}
	s.api(t, "GET", "/api/v1/connections", nil, &conns)
	for range 3 {
		postStripe(t, s, acme, "invoice.payment_failed")
	}
	eventually(t, 30*time.Second, "the events fail at the consumer", func() bool {
		ev := s.events(t)
		return len(ev) == 3 && ev[0].State == "retrying"
	})
	ev := s.events(t)
	msgs := s.messages(t)
	pages := []string{"/console/", "/console/messages", "/console/messages/" + msgs[0].ID, "/console/events",
		"/console/events/" + ev[0].ID, "/console/event-types", "/console/dead", "/console/endpoints", "/console/connections",
		"/console/consumers", "/console/consumers/" + consumer.ID, "/console/notifications"}
	if len(conns.Items) > 0 {
		pages = append(pages, "/console/connections/"+conns.Items[0].ID)
	}
	var issues struct {
		Items []struct{ ID string } `json:"items"`
	}
	s.api(t, "GET", "/api/v1/issues?status=open", nil, &issues)
	if len(issues.Items) != 1 {
		t.Fatalf("open issues: %+v, want the consumer's", issues.Items)
	}
	pages = append(pages, "/console/issues", "/console/issues/"+issues.Items[0].ID)

	tab := browserTab(t)
	for _, who := range []struct{ name, token string }{{"acme's admin", acme.key}, {"staff", staffToken}} {
		signIn(t, tab, s.url, who.token, "header.top")
		for _, width := range []int64{420, 1280} {
			for _, path := range pages {
				step(t, tab, "open "+path, chromedp.EmulateViewport(width, 900), chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
				bad := read(t, tab, "measure", chromedp.Evaluate[[]string](`(() => {
					const bad = [], root = document.documentElement;
					if (root.scrollWidth > root.clientWidth + 1) bad.push("the page is " + root.scrollWidth + " px wide in a " + root.clientWidth + " px window");
					if (`+strconv.FormatBool(width >= 1280)+`) {
						const tops = new Set(Array.from(document.querySelectorAll("header.top nav a")).map(a => Math.round(a.getBoundingClientRect().top)));
						if (tops.size > 1) bad.push("the navigation wraps onto " + tops.size + " rows");
					}
					return bad;
				})()`))
				if len(bad) > 0 {
					t.Errorf("%s, %s at %d px: %v", who.name, path, width, bad)
				}
			}
		}
		// Every alarm of the overview leads to a page with rows, never to an
		// empty list or an error.
		step(t, tab, "open the overview", chromedp.Navigate(s.url+"/console/"), chromedp.WaitVisible(chromedp.CSS("main h1")))
		links := read(t, tab, "alarm links", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".alarms a")).map(a => a.getAttribute("href"))`))
		if len(links) == 0 {
			t.Errorf("%s: the overview raises no alarm for a consumer answering 500", who.name)
		}
		for _, link := range links {
			step(t, tab, "follow "+link, chromedp.Navigate(s.url+link), chromedp.WaitVisible(chromedp.CSS("main h1")))
			rows := read(t, tab, "rows", chromedp.Evaluate[int](`document.querySelectorAll("main section.notice").length ? -1 : document.querySelectorAll("main table tbody tr, main table tr").length`))
			if rows <= 0 {
				t.Errorf("%s: the alarm's link %s leads to no rows (%d)", who.name, link, rows)
			}
		}
		step(t, tab, "sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("token")))
	}
}
