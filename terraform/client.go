package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// client calls intake's admin API (README: Admin API) with a bearer token.
type client struct {
	server string // http://host:port, without /api/v1
	token  string
	http   *http.Client
}

// apiError is an answer other than 2xx: the API's {"error": {code,
// message}} and the status it came with.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("intake answered %d", e.Status)
	}
	return fmt.Sprintf("intake answered %d %s: %s", e.Status, e.Code, e.Message)
}

// notFound reports whether err is the API's 404: the object is gone (or
// was never the caller's to see).
func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// call sends in (when not nil) as JSON to the API path, with If-Match when
// ifMatch is set, decodes a 2xx answer into out (when not nil), and returns
// the answer's ETag, the version of the object it shows.
func (c *client) call(ctx context.Context, method, path string, in, out any, ifMatch string) (etag string, err error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return "", err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+"/api/v1"+path, body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &apiError{Status: resp.StatusCode}
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &eb) == nil {
			ae.Code, ae.Message = eb.Error.Code, eb.Error.Message
		}
		return "", ae
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return "", fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
		}
	}
	return resp.Header.Get("ETag"), nil
}

func newClient(server, token string) *client {
	return &client{server: strings.TrimRight(server, "/"), token: token, http: &http.Client{Timeout: 60 * time.Second}}
}

// apiPath joins an API path and an escaped id.
func apiPath(prefix, id string) string { return prefix + "/" + url.PathEscape(id) }

// addError adds err to diags as an error saying what was being done; a
// 412 says the object changed since it was read.
func addError(diags *diag.Diagnostics, doing string, err error) {
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusPreconditionFailed {
		diags.AddError(doing+": changed outside OpenTofu since it was read",
			"intake refused the change (412 version_mismatch): the object's version (ETag) is no longer the one this plan was made over, so the change would overwrite what nobody has seen. Run plan again to see the object as it is now.")
		return
	}
	diags.AddError(doing, err.Error())
}
