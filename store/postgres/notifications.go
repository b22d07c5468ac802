package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/intakehq/intake"
)

// PutNotificationSettings sets where an org's notifications go.
func (s *Store) PutNotificationSettings(ctx context.Context, sc intake.Scope, n intake.NotificationSettings, audit ...intake.AuditEntry) error {
	if !validIDs(n.OrgID) || !sc.Allows(n.OrgID) {
		return notFound("org", n.OrgID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		if err := orgExists(ctx, tx, n.OrgID); err != nil {
			return err
		}
		var tag pgconn.CommandTag
		var err error
		if n.Version == 0 {
			tag, err = tx.Exec(ctx, `INSERT INTO notification_settings (org_id, url, sealed_slack_url, topics, sealed_secret, updated_at, sealed_url)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (org_id) DO NOTHING`,
				n.OrgID, text(n.URL), n.SealedSlackURL, texts(n.Topics), n.SealedSecret, ts(n.UpdatedAt), n.SealedURL)
		} else {
			tag, err = tx.Exec(ctx, `UPDATE notification_settings SET url = $2, sealed_slack_url = $3, topics = $4, sealed_secret = $5,
				updated_at = $6, sealed_url = $8, version = version + 1 WHERE org_id = $1 AND version = $7`,
				n.OrgID, text(n.URL), n.SealedSlackURL, texts(n.Topics), n.SealedSecret, ts(n.UpdatedAt), n.Version, n.SealedURL)
		}
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		var now int64
		if err := tx.QueryRow(ctx, `SELECT version FROM notification_settings WHERE org_id = $1`, n.OrgID).Scan(&now); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return intake.Errorf(intake.EVERSION, "org %s has no notification settings now", n.OrgID)
			}
			return err
		}
		return intake.Errorf(intake.EVERSION, "the notification settings changed since they were read: they are at version %d now", now)
	})
}

// NotificationSettings returns an org's settings visible in sc.
func (s *Store) NotificationSettings(ctx context.Context, sc intake.Scope, orgID string) (intake.NotificationSettings, error) {
	n := intake.NotificationSettings{OrgID: orgID}
	if !validIDs(orgID) {
		return n, intake.Errorf(intake.ENOTFOUND, "org %s has no notification settings", orgID)
	}
	var updated *time.Time
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT url, sealed_url, sealed_slack_url, topics, sealed_secret, updated_at, version FROM notification_settings
			WHERE org_id = $1 AND ($2::uuid IS NULL OR org_id = $2)`, orgID, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) error {
				return row.Scan(&n.URL, &n.SealedURL, &n.SealedSlackURL, &n.Topics, &n.SealedSecret, &updated, &n.Version)
			})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return n, intake.Errorf(intake.ENOTFOUND, "org %s has no notification settings", orgID)
	}
	n.UpdatedAt = fromTS(updated)
	return n, err
}

// InsertNotice records a notice outside a settlement.
func (s *Store) InsertNotice(ctx context.Context, n intake.Notice) error {
	return s.tx(ctx, func(tx pgx.Tx) error { return insertNotice(ctx, tx, n) })
}

func insertNotice(ctx context.Context, q querier, n intake.Notice) error {
	_, err := q.Exec(ctx, `INSERT INTO notices (id, org_id, topic, subject, detail, at) VALUES ($1, $2, $3, $4, $5, $6)`,
		n.ID, n.OrgID, text(n.Topic), text(n.Subject), text(n.Detail), ts(n.At))
	return err
}

// UnsentNotices returns the oldest notices not yet sent.
func (s *Store) UnsentNotices(ctx context.Context, limit int) ([]intake.Notice, error) {
	var out []intake.Notice
	err := s.read(ctx, intake.Scope{}, func(b *pgx.Batch) {
		queueRows(b, &out, scanNotice, `SELECT id, org_id, topic, subject, detail, at FROM notices
			WHERE sent_at IS NULL ORDER BY at, id LIMIT $1`, limit)
	})
	return out, err
}

func scanNotice(row pgx.Row) (intake.Notice, error) {
	var n intake.Notice
	var at *time.Time
	err := row.Scan(&n.ID, &n.OrgID, &n.Topic, &n.Subject, &n.Detail, &at)
	n.At = fromTS(at)
	return n, err
}

// LastSentNotice returns when a notice of the group was last sent.
func (s *Store) LastSentNotice(ctx context.Context, orgID, topic, subject string) (time.Time, error) {
	if !validIDs(orgID) {
		return time.Time{}, nil
	}
	var at *time.Time
	err := s.read(ctx, intake.Scope{}, func(b *pgx.Batch) {
		b.Queue(`SELECT max(sent_at) FROM notices WHERE org_id = $1 AND topic = $2 AND subject = $3`,
			orgID, text(topic), text(subject)).QueryRow(func(row pgx.Row) error { return row.Scan(&at) })
	})
	return fromTS(at), err
}

// SubjectNames names the consumers, connections and endpoints among ids.
func (s *Store) SubjectNames(ctx context.Context, ids []string) (map[string]intake.SubjectName, error) {
	out := map[string]intake.SubjectName{}
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !validIDs(id) })
	if len(ids) == 0 {
		return out, nil
	}
	type named struct {
		id string
		n  intake.SubjectName
	}
	var rows []named
	err := s.read(ctx, intake.Scope{}, func(b *pgx.Batch) {
		queueRows(b, &rows, func(row pgx.Row) (named, error) {
			var r named
			err := row.Scan(&r.id, &r.n.OrgID, &r.n.Kind, &r.n.Name, &r.n.ConnectionID, &r.n.ConnectionName)
			return r, err
		}, `
			SELECT id::text, org_id::text, 'consumer', name, '', '' FROM consumers WHERE id = ANY($1::uuid[])
			UNION ALL
			SELECT id::text, org_id::text, 'connection', name, '', '' FROM connections WHERE id = ANY($1::uuid[])
			UNION ALL
			SELECT e.id::text, e.org_id::text, 'endpoint', e.name, c.id::text, c.name FROM endpoints e JOIN connections c ON c.id = e.connection_id
			 WHERE e.id = ANY($1::uuid[])`, ids)
	})
	for _, r := range rows {
		out[r.id] = r.n
	}
	return out, err
}

// MarkNoticesSent records that the notices were sent (or dropped).
func (s *Store) MarkNoticesSent(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if !validIDs(ids...) {
		return intake.Errorf(intake.EINVALID, "notice ids must be ids")
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE notices SET sent_at = $1 WHERE sent_at IS NULL AND id = ANY($2::uuid[])`, ts(at), ids)
		return err
	})
}
