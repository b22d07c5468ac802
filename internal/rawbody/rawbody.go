// Package rawbody serves a stored request body exactly as received. The
// body is whatever anyone posted to an endpoint, so a browser must never
// run it on intake's origin: no sniffing, and a sandbox if it claims to be
// HTML.
package rawbody

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// Write answers with body and the Content-Type it arrived with. A
// non-empty filename makes browsers download it rather than show it.
func Write(w http.ResponseWriter, body []byte, header http.Header, filename string) {
	Stream(w, bytes.NewReader(body), int64(len(body)), header, filename)
}

// Stream answers like Write with size bytes read from body as they come,
// so a large body read from object storage is never held whole.
func Stream(w http.ResponseWriter, body io.Reader, size int64, header http.Header, filename string) {
	ct := header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "no-store")
	if filename != "" {
		h.Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	}
	w.WriteHeader(http.StatusOK)
	// An error here is the client gone, or the store failing mid-body: the
	// answer is cut short of its Content-Length, which the client sees.
	_, _ = io.CopyN(w, body, size)
}
