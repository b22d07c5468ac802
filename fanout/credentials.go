package fanout

import (
	"context"

	"github.com/intakehq/intake"
	"github.com/intakehq/intake/provider"
)

// readCredentials reads into b, through the cache, the header names each
// of the connections makes credentials (Okta's auth_header), which rules
// never see. A connection that cannot be read fails the batch's rules that
// read requests, as the requests failing would: judged blind they could
// see a secret.
func (j *Judger) readCredentials(ctx context.Context, b *Batch, connectionIDs []string) {
	b.credentials = make(map[string][]string, len(connectionIDs))
	for _, id := range connectionIDs {
		if _, ok := b.credentials[id]; ok {
			continue
		}
		names, err := j.credentials.Get(id, j.cfg.Clock.Now(), func() ([]string, error) {
			cn, err := j.cfg.Store.Connection(ctx, intake.Scope{}, id)
			if intake.ErrorCode(err) == intake.ENOTFOUND {
				return nil, nil // deleted: the word list alone applies
			}
			if err != nil {
				return nil, err
			}
			return provider.CredentialHeaders(cn), nil
		})
		if err != nil && b.requestsErr == nil {
			b.requestsErr = err
		}
		b.credentials[id] = names
	}
}
