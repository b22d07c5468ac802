package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/fair"
)

// Credentials are looked up in the store by anyone who sends one, before
// anything is known of the sender: an anonymous door (DESIGN §26). Two
// bounds keep a flood of made-up tokens or cookies from the operators'
// read connections, and from the operators who hold a real one:
//
//   - a key that was found is kept for keyTTL (and dropped at once by any
//     operator's change: a revoked key, a deleted or renamed org), so the
//     callers who hold real keys rarely look one up;
//   - the lookups that do reach the store are at most lookupsPerClient at
//     once per client address, and lookupsTotal in all, each address at
//     most its fair share: past them a lookup waits up to lookupWait, then
//     is refused with EBUSY and a Retry-After. Behind a proxy every client
//     shares its address, and so its budget; the cache still serves them.
const (
	keyTTL           = 5 * time.Second
	lookupsPerClient = 1
	lookupsTotal     = 2
	lookupWait       = time.Second
)

// cachedKey is what a found key stands for.
type cachedKey struct {
	org  intake.Org
	role intake.Role
}

func newLookups() *fair.Budget {
	return &fair.Budget{What: "credential lookups", PerOrg: lookupsPerClient, Total: lookupsTotal, Wait: lookupWait}
}

// Client names the sender of r for the credential lookups' budget: its
// address without the port.
func Client(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// LookUp runs read, a lookup of a credential client sent (a key, a
// console session's cookie), within the credential lookups' budget and on
// the operators' read connections.
func (p *Plane) LookUp(ctx context.Context, client string, read func(context.Context) error) error {
	release, err := p.lookups.Take(ctx, "client:"+client, 1)
	if err != nil {
		var busy *fair.Busy
		if errors.As(err, &busy) {
			return &intake.Error{Code: intake.EBUSY, RetryAfter: busy.RetryAfter, Err: err,
				Message: fmt.Sprintf("too many credentials from this address are being checked; try again in %s", busy.RetryAfter.Round(time.Second))}
		}
		return err
	}
	defer release()
	return read(intake.OperatorRead(ctx))
}

// keyOf finds the org and role of the key whose hash is given: from the
// cache, or looked up within client's budget.
func (p *Plane) keyOf(ctx context.Context, client string, hash []byte) (cachedKey, error) {
	return p.keys.Get(string(hash), p.now(), func() (cachedKey, error) {
		var k cachedKey
		err := p.LookUp(ctx, client, func(ctx context.Context) (err error) {
			k.org, k.role, err = p.store.OrgByKeyHash(ctx, hash)
			return err
		})
		return k, err
	})
}
