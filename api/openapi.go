package api

import (
	_ "embed"
	"net/http"
	"strconv"
)

//go:generate go test . -run TestOpenAPIDocumentIsCurrent -update

// openAPIDocument describes every route of the admin API (OpenAPI 3.1). It
// is generated from the wire types and the operations table in
// openapi_doc_test.go; a test fails when it is stale.
//
//go:embed openapi.json
var openAPIDocument []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDocument)))
	_, _ = w.Write(openAPIDocument) // the client went away; nothing left to tell it
}
