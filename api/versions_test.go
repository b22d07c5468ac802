package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/api"
)

// TestReadsAnswerAnETagAndAChangeOverAnOlderOneIs412: a consumer's,
// endpoint's and connection's reads carry their version as an ETag; a
// PATCH with If-Match naming an older one is refused 412 and changes
// nothing; one naming the current version is made and answers the next.
func TestReadsAnswerAnETagAndAChangeOverAnOlderOneIs412(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	cons := must[api.Consumer](e, 201, "POST", "/api/v1/consumers", acme.org.APIKey, newConsumer("app", "*"))
	for _, path := range []string{"/api/v1/consumers/" + cons.ID, "/api/v1/endpoints/" + acme.ep.ID, "/api/v1/connections/" + acme.conn.ID} {
		patch := func(etag, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest("PATCH", path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+acme.org.APIKey)
			if etag != "" {
				req.Header.Set("If-Match", etag)
			}
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			return rec
		}
		read := e.do("GET", path, acme.org.APIKey, nil)
		first := read.Header().Get("ETag")
		if read.Code != http.StatusOK || first != `"1"` {
			t.Fatalf("GET %s: %d, ETag %q; want 200 and \"1\"", path, read.Code, first)
		}
		if rec := patch(first, `{"name":"renamed"}`); rec.Code != http.StatusOK || rec.Header().Get("ETag") != `"2"` {
			t.Fatalf("PATCH %s over its version: %d, ETag %q: %s", path, rec.Code, rec.Header().Get("ETag"), rec.Body)
		}
		wantError(t, patch(first, `{"name":"stale"}`), http.StatusPreconditionFailed, intake.EVERSION, "changed since version 1")
		if got := e.do("GET", path, acme.org.APIKey, nil); !strings.Contains(got.Body.String(), `"renamed"`) || got.Header().Get("ETag") != `"2"` {
			t.Fatalf("after the refused change %s reads %s (ETag %q)", path, got.Body, got.Header().Get("ETag"))
		}
		wantError(t, patch("yesterday", `{"name":"x"}`), http.StatusBadRequest, intake.EINVALID, "If-Match")
		if rec := patch("", `{"name":"again"}`); rec.Code != http.StatusOK || rec.Header().Get("ETag") != `"3"` {
			t.Fatalf("PATCH %s without If-Match: %d, ETag %q", path, rec.Code, rec.Header().Get("ETag"))
		}
	}
}

// TestAWeakETagNamesTheVersionAChangeIsMadeOver guards If-Match's reading
// of a weak ETag: a proxy that compresses an answer weakens its ETag ("1"
// becomes W/"1"), and a change made over it is made, or refused 412 when
// stale, as over the strong one; never 400.
func TestAWeakETagNamesTheVersionAChangeIsMadeOver(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	path := "/api/v1/endpoints/" + acme.ep.ID
	patch := func(etag, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("PATCH", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+acme.org.APIKey)
		req.Header.Set("If-Match", etag)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	if rec := patch(`W/"1"`, `{"name":"renamed"}`); rec.Code != http.StatusOK || rec.Header().Get("ETag") != `"2"` {
		t.Fatalf(`PATCH over W/"1": %d, ETag %q: %s`, rec.Code, rec.Header().Get("ETag"), rec.Body)
	}
	wantError(t, patch(`W/"1"`, `{"name":"stale"}`), http.StatusPreconditionFailed, intake.EVERSION, "changed since version 1")
}

// TestNotificationSettingsAnswerAnETagAndAPutOverAnOlderOneIs412.
func TestNotificationSettingsAnswerAnETagAndAPutOverAnOlderOneIs412(t *testing.T) {
	e := newEnv(t)
	acme := e.newTenant("acme")
	path := "/api/v1/orgs/" + acme.org.ID + "/notifications"
	put := func(etag, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("PUT", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+acme.org.APIKey)
		if etag != "" {
			req.Header.Set("If-Match", etag)
		}
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	if rec := put("", `{"topics":["message.dead"]}`); rec.Code != http.StatusOK || rec.Header().Get("ETag") != `"1"` {
		t.Fatalf("first PUT: %d, ETag %q: %s", rec.Code, rec.Header().Get("ETag"), rec.Body)
	}
	if rec := put(`"1"`, `{"topics":["event.dead"]}`); rec.Code != http.StatusOK || rec.Header().Get("ETag") != `"2"` {
		t.Fatalf("PUT over version 1: %d, ETag %q: %s", rec.Code, rec.Header().Get("ETag"), rec.Body)
	}
	wantError(t, put(`"1"`, `{"topics":[]}`), http.StatusPreconditionFailed, intake.EVERSION, "changed since version 1")
	got := e.do("GET", path, acme.org.APIKey, nil)
	if !strings.Contains(got.Body.String(), `"event.dead"`) || got.Header().Get("ETag") != `"2"` {
		t.Fatalf("after the refused put the settings read %s (ETag %q)", got.Body, got.Header().Get("ETag"))
	}
}
