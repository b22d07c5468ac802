package e2e

import (
	"testing"

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
