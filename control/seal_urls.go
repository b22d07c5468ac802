package control

import (
	"context"
	"fmt"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/internal/redact"
)

// startup is the actor of what the server does to its own rows at start.
var startup = Caller{Actor: "intake"}

// SealStoredURLs seals the credentials of the consumer and notification
// URLs stored in the clear (a NATS token, a Redis user, a query parameter
// named like a secret: rows saved before every credential in a URL was
// sealed), so reads, audit and exports show them as *** from now on; the
// router and the notifier use them as before. serve runs it at start; each
// row it seals has an audit entry. It returns how many it sealed.
func (p *Plane) SealStoredURLs(ctx context.Context) (int, error) {
	consumers, err := p.store.ListConsumers(ctx, intake.Scope{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, cs := range consumers {
		if len(cs.SealedURL) > 0 || redact.URL(cs.URL) == cs.URL {
			continue
		}
		p.setURL(&cs, cs.URL)
		a := p.entry(startup, cs.OrgID, "consumer.update", "consumer", cs.ID, "url=", cs.URL, " (its credentials sealed)")
		switch err := p.store.UpdateConsumer(ctx, intake.Scope{}, cs, a); {
		case intake.ErrorCode(err) == intake.EVERSION:
			continue // changed meanwhile, by its own save or another process's start
		case err != nil:
			return n, fmt.Errorf("seal the url of consumer %s: %w", cs.ID, err)
		}
		n++
	}
	orgs, err := p.store.ListOrgs(ctx, intake.Scope{})
	if err != nil {
		return n, err
	}
	for _, o := range orgs {
		s, err := p.store.NotificationSettings(ctx, intake.Scope{}, o.ID)
		if intake.ErrorCode(err) == intake.ENOTFOUND {
			continue
		}
		if err != nil {
			return n, err
		}
		if len(s.SealedURL) > 0 || redact.URL(s.URL) == s.URL {
			continue
		}
		old := s
		if err := p.setNotificationURL(&s, old, s.URL); err != nil {
			return n, err
		}
		a := p.entry(startup, o.ID, "notifications.update", "org", o.ID, "url=", s.URL, " (its credentials sealed)")
		switch err := p.store.PutNotificationSettings(ctx, intake.Scope{}, s, a); {
		case intake.ErrorCode(err) == intake.EVERSION:
			continue
		case err != nil:
			return n, fmt.Errorf("seal the notification url of org %s: %w", o.ID, err)
		}
		n++
	}
	return n, nil
}
