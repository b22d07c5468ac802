package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/intakehq/intake"
)

// PutNotificationSettings sets where an org's notifications go.
func (s *Store) PutNotificationSettings(ctx context.Context, sc intake.Scope, n intake.NotificationSettings, audit ...intake.AuditEntry) error {
	if !sc.Allows(n.OrgID) {
		return notFound("org", n.OrgID)
	}
	if n.Topics == nil {
		n.Topics = []string{}
	}
	topics, err := json.Marshal(n.Topics)
	if err != nil {
		return err
	}
	return s.audited(ctx, audit, func(tx *wtx) error {
		if err := orgExists(ctx, tx, n.OrgID); err != nil {
			return err
		}
		var res sql.Result
		var err error
		if n.Version == 0 {
			res, err = tx.ExecContext(ctx, `INSERT INTO notification_settings (org_id, url, sealed_url, sealed_slack_url, topics, sealed_secret, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (org_id) DO NOTHING`,
				n.OrgID, n.URL, n.SealedURL, n.SealedSlackURL, string(topics), n.SealedSecret, ts(n.UpdatedAt))
		} else {
			res, err = tx.ExecContext(ctx, `UPDATE notification_settings SET url = ?, sealed_url = ?, sealed_slack_url = ?, topics = ?, sealed_secret = ?,
				updated_at = ?, version = version + 1 WHERE org_id = ? AND version = ?`,
				n.URL, n.SealedURL, n.SealedSlackURL, string(topics), n.SealedSecret, ts(n.UpdatedAt), n.OrgID, n.Version)
		}
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 1 {
			return err
		}
		var now int64
		if err := tx.QueryRowContext(ctx, `SELECT version FROM notification_settings WHERE org_id = ?`, n.OrgID).Scan(&now); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
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
	var topics string
	var updated sql.NullInt64
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT url, sealed_url, sealed_slack_url, topics, sealed_secret, updated_at, version FROM notification_settings
		WHERE org_id = ?1 AND (?2 = '' OR org_id = ?2)`, orgID, sc.OrgID).
		Scan(&n.URL, &n.SealedURL, &n.SealedSlackURL, &topics, &n.SealedSecret, &updated, &n.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return n, intake.Errorf(intake.ENOTFOUND, "org %s has no notification settings", orgID)
	}
	if err != nil {
		return n, err
	}
	n.UpdatedAt = fromTS(updated)
	return n, json.Unmarshal([]byte(topics), &n.Topics)
}

// InsertNotice records a notice outside a settlement.
func (s *Store) InsertNotice(ctx context.Context, n intake.Notice) error {
	return s.tx(ctx, func(tx *wtx) error { return insertNotice(ctx, tx, n) })
}

func insertNotice(ctx context.Context, tx *wtx, n intake.Notice) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO notices (id, org_id, topic, subject, detail, at) VALUES (?, ?, ?, ?, ?, ?)`,
		n.ID, n.OrgID, n.Topic, n.Subject, n.Detail, ts(n.At))
	return err
}

// UnsentNotices returns the oldest notices not yet sent.
func (s *Store) UnsentNotices(ctx context.Context, limit int) ([]intake.Notice, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT id, org_id, topic, subject, detail, at FROM notices
		WHERE sent_at IS NULL ORDER BY at, id LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Notice
	for rows.Next() {
		var n intake.Notice
		var at sql.NullInt64
		if err := rows.Scan(&n.ID, &n.OrgID, &n.Topic, &n.Subject, &n.Detail, &at); err != nil {
			return nil, err
		}
		n.At = fromTS(at)
		out = append(out, n)
	}
	return out, rows.Err()
}

// LastSentNotice returns when a notice of the group was last sent.
func (s *Store) LastSentNotice(ctx context.Context, orgID, topic, subject string) (time.Time, error) {
	var at sql.NullInt64
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT max(sent_at) FROM notices WHERE org_id = ? AND topic = ? AND subject = ?`,
		orgID, topic, subject).Scan(&at)
	return fromTS(at), err
}

// SubjectNames names the consumers, connections and endpoints among ids.
func (s *Store) SubjectNames(ctx context.Context, ids []string) (map[string]intake.SubjectName, error) {
	out := map[string]intake.SubjectName{}
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `
		SELECT id, org_id, 'consumer', name, '', '' FROM consumers WHERE id IN (SELECT value FROM json_each(?1))
		UNION ALL
		SELECT id, org_id, 'connection', name, '', '' FROM connections WHERE id IN (SELECT value FROM json_each(?1))
		UNION ALL
		SELECT e.id, e.org_id, 'endpoint', e.name, c.id, c.name FROM endpoints e JOIN connections c ON c.id = e.connection_id
		 WHERE e.id IN (SELECT value FROM json_each(?1))`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n intake.SubjectName
		if err := rows.Scan(&id, &n.OrgID, &n.Kind, &n.Name, &n.ConnectionID, &n.ConnectionName); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// MarkNoticesSent records that the notices were sent (or dropped).
func (s *Store) MarkNoticesSent(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE notices SET sent_at = ? WHERE sent_at IS NULL AND id IN (SELECT value FROM json_each(?))`,
			ts(at), string(list))
		return err
	})
}
