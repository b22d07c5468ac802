// Package rawbody serves a stored request body exactly as received. The
// body is whatever anyone posted to an endpoint, so a browser must never
// run it on intake's origin: no sniffing, and a sandbox if it claims to be
// HTML.
package rawbody

import (
	"net/http"
	"strconv"
)

// Write answers with body and the Content-Type it arrived with. A
// non-empty filename makes browsers download it rather than show it.
func Write(w http.ResponseWriter, body []byte, header http.Header, filename string) {
	ct := header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "no-store")
	if filename != "" {
		h.Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body) // the client went away; nothing left to tell it
}
