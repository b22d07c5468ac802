package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/intakehq/intake"
)

// brokenStore fails listing orgs with a given error.
type brokenStore struct {
	intake.Store
	err error
}

func (s brokenStore) ListOrgs(context.Context, intake.Scope) ([]intake.Org, error) { return nil, s.err }

func TestInternalErrorsAreHiddenFromCallersAndLogged(t *testing.T) {
	e := newEnvWith(t, func(s intake.Store) intake.Store {
		return brokenStore{Store: s, err: errors.New("disk /var/lib/intake on fire")}
	})
	rec := e.do("GET", "/api/v1/orgs", staffToken, nil)
	wantError(t, rec, 500, intake.EINTERNAL, "internal error")
	if strings.Contains(rec.Body.String(), "disk") {
		t.Fatalf("the cause leaked: %s", rec.Body)
	}
	if !strings.Contains(e.logs.String(), "disk /var/lib/intake on fire") {
		t.Fatalf("the cause was not logged: %s", e.logs)
	}
}

func TestStoreErrorCodesMapToStatuses(t *testing.T) {
	for code, status := range map[string]int{
		intake.EINVALID:      400,
		intake.ENOTFOUND:     404,
		intake.EUNAUTHORIZED: 401,
		intake.EFORBIDDEN:    403,
		intake.ECONFLICT:     409,
		intake.EVERSION:      412,
		intake.ETOOLARGE:     413,
		intake.EUNAVAILABLE:  503,
		intake.ESTALE:        500,
	} {
		e := newEnvWith(t, func(s intake.Store) intake.Store {
			return brokenStore{Store: s, err: intake.Errorf(code, "the %s message", code)}
		})
		rec := e.do("GET", "/api/v1/orgs", staffToken, nil)
		if status == 500 {
			wantError(t, rec, 500, intake.EINTERNAL, "internal error")
			continue
		}
		wantError(t, rec, status, code, "the "+code+" message")
	}
}
