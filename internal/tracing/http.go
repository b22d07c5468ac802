package tracing

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// WebhookRoute is the route of every ingress span: the path itself carries
// the endpoint's token, so it is never recorded.
const WebhookRoute = "/webhooks/{token}"

// HTTPMethod is a request's method as the HTTP conventions record it: one
// of the standard methods, or _OTHER, so a client cannot write what it
// likes into a span.
func HTTPMethod(method string) attribute.KeyValue {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return semconv.HTTPRequestMethodKey.String(method)
	}
	return semconv.HTTPRequestMethodOther
}

// HTTPRoute is the route template a server span records instead of a path.
func HTTPRoute(route string) attribute.KeyValue { return semconv.HTTPRoute(route) }

// HTTPStatus is the status code of an answer.
func HTTPStatus(code int) attribute.KeyValue { return semconv.HTTPResponseStatusCode(code) }

// ServerAddress is the host a client span called, without its path or
// query, which may carry a token.
func ServerAddress(host string) attribute.KeyValue { return semconv.ServerAddress(host) }
