package api_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/intakehq/intake/api"
	"github.com/intakehq/intake/control"
)

func init() {
	// The event stream's body is text; its schema is a string.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
}

// openAPI is the committed document, loaded and checked once.
var openAPI = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIFile)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("api/%s is not a valid OpenAPI document: %w", openAPIFile, err)
	}
	return doc, nil
})

var openAPIRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openAPI()
	if err != nil {
		return nil, err
	}
	return gorillamux.NewRouter(doc)
})

// validatedOperations records each operation whose answer the suite checked.
var validatedOperations sync.Map

// validating checks every request and answer that passes through h against
// the committed OpenAPI document, and fails t on a mismatch: each answer
// must be one the document describes for its operation and status, and a
// request the server accepted must be one the document allows.
func validating(t *testing.T, h http.Handler) http.Handler {
	router, err := openAPIRouter()
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			var err error
			if reqBody, err = io.ReadAll(r.Body); err != nil {
				t.Errorf("%s %s: reading the request body: %v", r.Method, r.URL.Path, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		check := func(status int, header http.Header, body []byte) {
			if err := checkExchange(router, r.Clone(context.Background()), reqBody, status, header, body); err != nil {
				t.Error(err)
			}
		}
		tw := &teeWriter{ResponseWriter: w, check: check}
		h.ServeHTTP(tw, r)
		tw.finish()
	})
}

// checkExchange checks one request and its answer against the document.
func checkExchange(router routers.Router, r *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	what := fmt.Sprintf("%s %s answered %d", r.Method, r.URL.Path, status)
	route, params, err := router.FindRoute(r)
	if err != nil {
		// The mux's own answer to a path or method it does not serve.
		if (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) &&
			strings.HasPrefix(header.Get("Content-Type"), "text/plain") {
			return nil
		}
		return fmt.Errorf("%s, but api/%s has no such operation: %v", what, openAPIFile, err)
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	if status < 300 {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		// The server reads every body as JSON, whatever its Content-Type;
		// the tests send none.
		if len(reqBody) > 0 && r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("%s, but api/%s does not allow the request (%s): %v", what, openAPIFile, reqBody, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s, which api/%s does not describe: %v\nbody: %.2000s", what, openAPIFile, err, body)
	}
	validatedOperations.Store(route.Operation.OperationID, true)
	return nil
}

// teeWriter passes an answer through while keeping a copy to check. An
// event stream does not end while its test runs: it is checked at its
// first write, status and headers only.
type teeWriter struct {
	http.ResponseWriter
	check   func(status int, header http.Header, body []byte)
	status  int
	body    bytes.Buffer
	stream  bool
	checked bool
}

func (w *teeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		w.stream = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
		if w.stream {
			w.checked = true
			w.check(status, w.Header().Clone(), nil)
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.stream {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the stream and set deadlines.
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *teeWriter) finish() {
	if w.checked {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.check(w.status, w.Header(), w.body.Bytes())
}

// checkOpenAPICoverage runs after the whole suite: it fails unless the
// suite's answers, all checked against the document, covered every
// operation the document describes, so the checks cannot pass by checking
// nothing.
func checkOpenAPICoverage() int {
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" {
		return 0 // a chosen subset of the tests covers a subset of the routes
	}
	if f := flag.Lookup("test.skip"); f == nil || f.Value.String() != "" {
		return 0
	}
	doc, err := openAPI()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var all, missing []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			all = append(all, op.OperationID)
			if _, ok := validatedOperations.Load(op.OperationID); !ok {
				missing = append(missing, op.OperationID+" ("+method+" "+path+")")
			}
		}
	}
	sort.Strings(missing)
	fmt.Printf("openapi: %d of %d operations' answers validated against api/%s\n", len(all)-len(missing), len(all), openAPIFile)
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: no test's answer was validated for:\n  %s\n", strings.Join(missing, "\n  "))
		return 1
	}
	return 0
}

func TestOpenAPIDocumentDescribesEveryRouteAndNoOther(t *testing.T) {
	doc, err := openAPI()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	srv := api.New(api.Config{Control: control.New(control.Config{Store: e.store, Sealer: e.sealer, PublicURL: publicURL}),
		Wakes: e.store, PublicURL: publicURL})
	served := map[string]bool{}
	for _, pattern := range append(srv.Routes(), srv.PublicRoutes()...) {
		served[strings.ReplaceAll(pattern, "...}", "}")] = true
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	var missing, stale []string
	for route := range served {
		if !documented[route] {
			missing = append(missing, route)
		}
	}
	for route := range documented {
		if !served[route] {
			stale = append(stale, route)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("served but missing from api/%s: %s\n(add each to operations() in api/openapi_doc_test.go, then run `go generate ./api`)",
			openAPIFile, strings.Join(missing, ", "))
	}
	if len(stale) > 0 {
		t.Errorf("in api/%s but not served: %s\n(remove each from operations() in api/openapi_doc_test.go, then run `go generate ./api`)",
			openAPIFile, strings.Join(stale, ", "))
	}
	if len(served) < 40 {
		t.Errorf("the server lists %d routes; the check needs them all", len(served))
	}
}

func TestOpenAPIDocumentIsServedWithoutToken(t *testing.T) {
	e := newEnv(t)
	rec := e.do("GET", "/api/v1/openapi.json", "", nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	want, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("served document differs from api/%s", openAPIFile)
	}
	doc, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	if err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("served document: OpenAPI %q, %v", doc.OpenAPI, err)
	}
}

// TestValidatorRefusesExchangesTheDocumentDoesNotDescribe proves the
// checking middleware can fail: each exchange below is reported.
func TestValidatorRefusesExchangesTheDocumentDoesNotDescribe(t *testing.T) {
	router, err := openAPIRouter()
	if err != nil {
		t.Fatal(err)
	}
	org := `{"id":"0190a0d6-0000-7000-8000-000000000000","name":"acme","created_at":"2025-03-01T12:00:00Z"}`
	for name, c := range map[string]struct {
		method, path, request string
		status                int
		body                  string
	}{
		"answer missing a member":      {"GET", "/api/v1/orgs", "", 200, `{"items":[{"id":"0190a0d6-0000-7000-8000-000000000000","name":"acme"}]}`},
		"undocumented status":          {"GET", "/api/v1/orgs", "", 422, `{"error":{"code":"invalid","message":"no"}}`},
		"error without the error body": {"GET", "/api/v1/orgs", "", 400, `{"message":"bad"}`},
		"unknown error code":           {"GET", "/api/v1/orgs", "", 400, `{"error":{"code":"oops","message":"bad"}}`},
		"accepted unknown member":      {"POST", "/api/v1/orgs", `{"name":"acme","color":"red"}`, 201, org},
		"accepted without a required":  {"POST", "/api/v1/orgs", `{}`, 201, org},
		"undocumented route":           {"GET", "/api/v1/nowhere", "", 200, `{}`},
	} {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.request))
			req.Header.Set("Authorization", "Bearer "+staffToken)
			h := http.Header{"Content-Type": {"application/json"}}
			if err := checkExchange(router, req, []byte(c.request), c.status, h, []byte(c.body)); err == nil {
				t.Fatalf("%s %s %s answered %d %s passed validation", c.method, c.path, c.request, c.status, c.body)
			}
		})
	}
	// The same exchange, as the document describes it, passes.
	req := httptest.NewRequest("POST", "/api/v1/orgs", strings.NewReader(`{"name":"acme"}`))
	req.Header.Set("Authorization", "Bearer "+staffToken)
	h := http.Header{"Content-Type": {"application/json"}}
	if err := checkExchange(router, req, []byte(`{"name":"acme"}`), 201, h, []byte(org)); err != nil {
		t.Fatal(err)
	}
}
