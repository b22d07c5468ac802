package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/intakehq/intake/provider/fixtures"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// browserTab starts a headless Chromium with a fresh profile and returns a
// tab in it that accepts every confirm() dialog, as an operator clicking OK.
// Without Chromium the test fails in CI and is skipped elsewhere.
func browserTab(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath
	if _, err := os.Stat(path); err != nil {
		if p, lookErr := exec.LookPath("chromium"); lookErr == nil {
			path = p
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is missing (%v): CI must install Debian's chromium package", err)
		} else {
			t.Skip("chromium is not installed (apt-get install chromium)")
		}
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
				return err
			}))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// step runs browser actions with a hang guard; every wait in them is for
// the page, which answers in milliseconds.
func step(t *testing.T, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func read[T any](t *testing.T, tab context.Context, what string, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// signIn fills the console's sign-in form and waits for the page it leads
// to: the console's navigation when the token was good, the form again with
// its error when not.
func signIn(t *testing.T, tab context.Context, base, tok string, then string) {
	t.Helper()
	step(t, tab, "sign in",
		chromedp.Navigate(base+"/console/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.CSS(then)),
	)
}

// consoleOrg is an org with a Stripe connection and an endpoint, made
// through the admin API.
type consoleOrg struct {
	id, key, token string
}

func setupStripeOrg(t *testing.T, s *server, name string) consoleOrg {
	t.Helper()
	var org struct {
		ID     string
		APIKey string `json:"api_key"`
	}
	s.api(t, "POST", "/api/v1/orgs", map[string]any{"name": name}, &org)
	var conn struct{ ID string }
	s.api(t, "POST", "/api/v1/connections", map[string]any{"org_id": org.ID, "provider": "stripe", "name": name + " live",
		"secrets": []string{"whsec_browser_test"}}, &conn)
	var ep struct{ Token string }
	s.api(t, "POST", "/api/v1/endpoints", map[string]any{"connection_id": conn.ID, "rate_per_sec": 0}, &ep)
	return consoleOrg{id: org.ID, key: org.APIKey, token: ep.Token}
}

// postStripe posts a signed Stripe sample to the org's endpoint.
func postStripe(t *testing.T, s *server, o consoleOrg, typ string) {
	t.Helper()
	url := s.url + "/webhooks/" + o.token
	sample, err := fixtures.Build("stripe", fixtures.Options{Type: typ, Secret: "whsec_browser_test", URL: url})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := sample.Request(url)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("ingress answered %d", resp.StatusCode)
	}
}

// rowsOf reads the data-id of every row of a list on the current page.
func rowsOf(t *testing.T, tab context.Context, table string) []string {
	t.Helper()
	return read(t, tab, "read the rows", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#`+table+` tbody tr")).map(r => r.dataset.id)`))
}

// reloadUntil reloads the page until cond holds: the console is
// server-rendered, so a reload is how an operator sees news.
func reloadUntil(t *testing.T, tab context.Context, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(200 * time.Millisecond)
		step(t, tab, "reload", chromedp.Reload())
	}
}

func TestConsoleInBrowserShowsAMessageArriveAndReplaysIt(t *testing.T) {
	s := start(t, t.TempDir())
	acme := setupStripeOrg(t, s, "acme")
	tab := browserTab(t)

	signIn(t, tab, s.url, acme.key, "header.top")
	step(t, tab, "open messages", chromedp.Navigate(s.url+"/console/messages"), chromedp.WaitVisible(chromedp.CSS("p.empty")))

	postStripe(t, s, acme, "invoice.paid")
	var rows []string
	reloadUntil(t, tab, "the message appears", func() bool {
		rows = rowsOf(t, tab, "messages")
		return len(rows) == 1
	})
	original := rows[0]

	step(t, tab, "open the message", chromedp.Click(chromedp.CSS("#messages a.row-link")), chromedp.WaitVisible(chromedp.ID("replay")))
	reloadUntil(t, tab, "the message is processed", func() bool {
		return read(t, tab, "state", chromedp.Text(chromedp.ID("state"))) == "processed"
	})
	if body := read(t, tab, "body", chromedp.Text(chromedp.ID("body"))); !strings.Contains(body, `"type": "invoice.paid"`) {
		t.Fatalf("the page shows the body as %q", body)
	}

	step(t, tab, "replay", chromedp.Click(chromedp.ID("replay")), chromedp.WaitVisible(chromedp.CSS("p.flash")))
	loc := read(t, tab, "location", chromedp.Location())
	replay := strings.TrimSuffix(strings.TrimPrefix(loc, s.url+"/console/messages/"), "?flash=replayed")
	if replay == original || len(replay) != 36 {
		t.Fatalf("after replay the browser is at %s", loc)
	}
	if href := read(t, tab, "replay of", chromedp.AttributeValue(chromedp.ID("replay-of"), "href")); href.Value != "/console/messages/"+original {
		t.Fatalf("the replay links to %q as its original", href.Value)
	}

	step(t, tab, "back to messages", chromedp.Navigate(s.url+"/console/messages"), chromedp.WaitVisible(chromedp.ID("messages")))
	rows = rowsOf(t, tab, "messages")
	if len(rows) != 2 || rows[0] != replay || rows[1] != original {
		t.Fatalf("messages %v, want the replay %s above the original %s", rows, replay, original)
	}
	if tag := read(t, tab, "replay tag", chromedp.Text(chromedp.CSS(`#messages tr[data-id="`+replay+`"] .tag`))); tag != "replay" {
		t.Fatalf("the new message is not marked a replay: %q", tag)
	}
}

func TestConsoleInBrowserRefusesAWrongToken(t *testing.T) {
	s := start(t, t.TempDir())
	tab := browserTab(t)
	signIn(t, tab, s.url, "ik_this-is-not-a-key", "p.error")
	if msg := read(t, tab, "error", chromedp.Text(chromedp.CSS("p.error"))); !strings.Contains(msg, "invalid token") {
		t.Fatalf("refusal says %q", msg)
	}
	cookies := read(t, tab, "cookies", chromedp.Action[[]*network.Cookie](func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{})
		return res.Cookies, err
	}))
	if len(cookies) != 0 {
		t.Fatalf("a refused sign-in left cookies: %+v", cookies)
	}
	step(t, tab, "a page needs a session", chromedp.Navigate(s.url+"/console/messages"), chromedp.WaitVisible(chromedp.ID("token")))
}

func TestConsoleInBrowserCannotReachAnotherOrgsMessageByURL(t *testing.T) {
	s := start(t, t.TempDir())
	acme, globex := setupStripeOrg(t, s, "acme"), setupStripeOrg(t, s, "globex")
	postStripe(t, s, acme, "invoice.paid")
	var msgs []message
	eventually(t, 30*time.Second, "acme's message settles", func() bool {
		msgs = s.messages(t)
		return len(msgs) == 1 && settled(msgs[0].State)
	})
	tab := browserTab(t)
	signIn(t, tab, s.url, globex.key, "header.top")
	step(t, tab, "open acme's message", chromedp.Navigate(s.url+"/console/messages/"+msgs[0].ID), chromedp.WaitVisible(chromedp.CSS("section.notice")))
	if h := read(t, tab, "heading", chromedp.Text(chromedp.CSS("section.notice h1"))); h != "Not found" {
		t.Fatalf("globex sees %q at acme's message", h)
	}
	html := read(t, tab, "page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(html, "invoice.paid") || strings.Contains(html, "acme") {
		t.Fatal("the refusal shows something of acme's message")
	}
	step(t, tab, "globex's own list", chromedp.Navigate(s.url+"/console/messages"), chromedp.WaitVisible(chromedp.CSS("p.empty")))
}
