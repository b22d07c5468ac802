// Package otlptest is a local OTLP/HTTP trace receiver for tests: it
// accepts what an exporter posts to /v1/traces, decodes the protobuf
// export requests and keeps their spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name, TraceID, SpanID, ParentSpanID, Service string
	Attributes                                   map[string]string
}

// Receiver is an OTLP/HTTP endpoint that records every span posted to it.
type Receiver struct {
	URL string // the base URL, for OTEL_EXPORTER_OTLP_ENDPOINT

	mu     sync.Mutex
	spans  []Span
	errs   []string
	posted chan struct{}
}

// New starts a receiver, stopped when the test ends.
func New(t testing.TB) *Receiver {
	r := &Receiver{posted: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.fail(req.Method + " " + req.URL.Path + ": not an OTLP trace export")
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			r.fail("gzip: " + err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	var export coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &export)
	}
	if err != nil {
		r.fail("decode: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				attrs := map[string]string{}
				for _, kv := range s.GetAttributes() {
					attrs[kv.GetKey()] = anyValue(kv.GetValue())
				}
				r.spans = append(r.spans, Span{Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()),
					SpanID: hex.EncodeToString(s.GetSpanId()), ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
					Service: service, Attributes: attrs})
			}
		}
	}
	r.mu.Unlock()
	select {
	case r.posted <- struct{}{}:
	default:
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *Receiver) fail(msg string) {
	r.mu.Lock()
	r.errs = append(r.errs, msg)
	r.mu.Unlock()
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Errors lists the requests the receiver could not take.
func (r *Receiver) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// WaitFor waits, export by export, until the spans received satisfy
// done, and fails the test if they do not within d.
func (r *Receiver) WaitFor(t testing.TB, d time.Duration, what string, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		if spans := r.Spans(); done(spans) {
			return spans
		}
		select {
		case <-r.posted:
		case <-deadline.C:
			t.Fatalf("otlptest: %s: not within %v; received %d spans, errors %v", what, d, len(r.Spans()), r.Errors())
		}
	}
}

// anyValue renders an attribute value as the SDK's Emit does.
func anyValue(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *common.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *common.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return v.String()
}
