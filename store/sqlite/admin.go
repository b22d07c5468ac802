package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/intakehq/intake"
)

// CreateOrg inserts an org with its first API key.
func (s *Store) CreateOrg(ctx context.Context, o intake.Org, key intake.APIKey, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)`,
			o.ID, o.Name, ts(o.CreatedAt)); err != nil {
			return orgNameTaken(err, o.Name)
		}
		key.OrgID = o.ID
		if key.CreatedAt.IsZero() {
			key.CreatedAt = o.CreatedAt
		}
		return insertKey(ctx, tx, key)
	})
}

func insertKey(ctx context.Context, tx *wtx, k intake.APIKey) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, org_id, prefix, key_hash, name, role, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.OrgID, k.Prefix, k.Hash, k.Name, cmp.Or(k.Role, intake.RoleAdmin), ts(k.CreatedAt))
	return err
}

// OrgByKeyHash finds the org of an unrevoked API key, and the key's role.
func (s *Store) OrgByKeyHash(ctx context.Context, apiKeyHash []byte) (intake.Org, intake.Role, error) {
	var o intake.Org
	var role intake.Role
	var created sql.NullInt64
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT o.id, o.name, o.created_at, o.version, k.role FROM api_keys k JOIN orgs o ON o.id = k.org_id
		WHERE k.key_hash = ? AND k.revoked_at IS NULL AND o.deleted_at IS NULL`, apiKeyHash).Scan(&o.ID, &o.Name, &created, &o.Version, &role)
	if errors.Is(err, sql.ErrNoRows) {
		return o, "", intake.Errorf(intake.ENOTFOUND, "no org has this key")
	}
	o.CreatedAt = fromTS(created)
	return o, role, err
}

// CreateAPIKey adds a key to an org visible in sc.
func (s *Store) CreateAPIKey(ctx context.Context, sc intake.Scope, k intake.APIKey, audit ...intake.AuditEntry) error {
	if !sc.Allows(k.OrgID) {
		return notFound("org", k.OrgID)
	}
	return s.audited(ctx, audit, func(tx *wtx) error {
		if err := orgExists(ctx, tx, k.OrgID); err != nil {
			return err
		}
		return insertKey(ctx, tx, k)
	})
}

// ListAPIKeys lists the keys visible in sc, revoked ones too.
func (s *Store) ListAPIKeys(ctx context.Context, sc intake.Scope) ([]intake.APIKey, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT id, org_id, prefix, name, role, created_at, revoked_at FROM api_keys
		WHERE (?1 = '' OR org_id = ?1) ORDER BY id`, sc.OrgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.APIKey
	for rows.Next() {
		var k intake.APIKey
		var created, revoked sql.NullInt64
		if err := rows.Scan(&k.ID, &k.OrgID, &k.Prefix, &k.Name, &k.Role, &created, &revoked); err != nil {
			return nil, err
		}
		k.CreatedAt, k.RevokedAt = fromTS(created), fromTS(revoked)
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeAPIKey stops a key visible in sc.
func (s *Store) RevokeAPIKey(ctx context.Context, sc intake.Scope, id string, at time.Time, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND (? = '' OR org_id = ?)`,
			ts(at), id, sc.OrgID, sc.OrgID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("api key", id)
		}
		tx.announce()
		return nil
	})
}

// ListOrgs lists the live orgs visible in sc.
func (s *Store) ListOrgs(ctx context.Context, sc intake.Scope) ([]intake.Org, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT id, name, created_at, coalesce(body_retention_us, 0), coalesce(retention_us, 0), version
		FROM orgs WHERE deleted_at IS NULL AND (?1 = '' OR id = ?1) ORDER BY id`, sc.OrgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Org
	for rows.Next() {
		var o intake.Org
		var created sql.NullInt64
		var body, meta int64
		if err := rows.Scan(&o.ID, &o.Name, &created, &body, &meta, &o.Version); err != nil {
			return nil, err
		}
		o.CreatedAt = fromTS(created)
		o.BodyRetention, o.Retention = time.Duration(body)*time.Microsecond, time.Duration(meta)*time.Microsecond
		out = append(out, o)
	}
	return out, rows.Err()
}

// UpdateOrg saves an org's name and retention overrides over the version
// it read.
func (s *Store) UpdateOrg(ctx context.Context, sc intake.Scope, o intake.Org, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE orgs SET name = ?, body_retention_us = nullif(?, 0), retention_us = nullif(?, 0), version = version + 1
			WHERE deleted_at IS NULL AND id = ? AND (? = '' OR id = ?) AND version = ?`,
			o.Name, o.BodyRetention.Microseconds(), o.Retention.Microseconds(), o.ID, sc.OrgID, sc.OrgID, o.Version)
		if err != nil {
			return orgNameTaken(err, o.Name)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var version int64
			err := tx.QueryRowContext(ctx, `SELECT version FROM orgs WHERE deleted_at IS NULL AND id = ?1 AND (?2 = '' OR id = ?2)`,
				o.ID, sc.OrgID).Scan(&version)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("org", o.ID)
			}
			if err != nil {
				return err
			}
			return intake.Errorf(intake.EVERSION, "the org changed since it was read: it is at version %d now", version)
		}
		tx.announce()
		return nil
	})
}

// orgNameTaken names the conflict when another live org holds name: the
// index that keeps live names unique refused the write.
func orgNameTaken(err error, name string) error {
	if code, _, ok := sqliteError(err); ok && code == sqliteConstraintUnique {
		return intake.Errorf(intake.ECONFLICT, "an org named %.64q exists already", name)
	}
	return err
}

// CreateConnection inserts a connection; its org must exist.
func (s *Store) CreateConnection(ctx context.Context, c intake.Connection, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		if err := orgExists(ctx, tx, c.OrgID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO connections (id, org_id, provider, name, sealed_secrets, config, created_at, filter)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.OrgID, c.Provider, c.Name, c.SealedSecrets, nullJSON(c.Config), ts(c.CreatedAt), c.Filter)
		return err
	})
}

func orgExists(ctx context.Context, tx *wtx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM orgs WHERE deleted_at IS NULL AND id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("org", id)
	}
	return err
}

const connectionColumns = `id, org_id, provider, name, sealed_secrets, config, created_at, filter, version, former_credential_headers`

func scanConnection(row interface{ Scan(...any) error }) (intake.Connection, error) {
	var c intake.Connection
	var config sql.NullString
	var created sql.NullInt64
	var former string
	err := row.Scan(&c.ID, &c.OrgID, &c.Provider, &c.Name, &c.SealedSecrets, &config, &created, &c.Filter, &c.Version, &former)
	if config.Valid {
		c.Config = []byte(config.String)
	}
	if err == nil && former != "[]" {
		err = json.Unmarshal([]byte(former), &c.FormerCredentialHeaders)
	}
	c.CreatedAt = fromTS(created)
	return c, err
}

// Connection returns one connection visible in sc.
func (s *Store) Connection(ctx context.Context, sc intake.Scope, id string) (intake.Connection, error) {
	c, err := scanConnection(s.reader(ctx).QueryRowContext(ctx,
		`SELECT `+connectionColumns+` FROM connections WHERE deleted_at IS NULL AND id = ?1 AND (?2 = '' OR org_id = ?2)`, id, sc.OrgID))
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFound("connection", id)
	}
	return c, err
}

// ListConnections lists the connections visible in sc.
func (s *Store) ListConnections(ctx context.Context, sc intake.Scope) ([]intake.Connection, error) {
	rows, err := s.reader(ctx).QueryContext(ctx,
		`SELECT `+connectionColumns+` FROM connections WHERE deleted_at IS NULL AND (?1 = '' OR org_id = ?1) ORDER BY id`, sc.OrgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Connection
	for rows.Next() {
		c, err := scanConnection(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ReplaceConnectionSecrets swaps a connection's sealed secret list.
func (s *Store) ReplaceConnectionSecrets(ctx context.Context, sc intake.Scope, id string, sealed []byte, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE connections SET sealed_secrets = ?, version = version + 1 WHERE deleted_at IS NULL AND id = ? AND (? = '' OR org_id = ?)`,
			sealed, id, sc.OrgID, sc.OrgID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("connection", id)
		}
		tx.announce()
		return nil
	})
}

// UpdateConnection saves a connection's name, config and filter.
func (s *Store) UpdateConnection(ctx context.Context, sc intake.Scope, c intake.Connection, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		former := []byte("[]")
		if len(c.FormerCredentialHeaders) > 0 {
			former, _ = json.Marshal(c.FormerCredentialHeaders)
		}
		res, err := tx.ExecContext(ctx, `UPDATE connections SET name = ?, config = ?, filter = ?, former_credential_headers = ?, version = version + 1
			WHERE deleted_at IS NULL AND id = ? AND (? = '' OR org_id = ?) AND version = ?`,
			c.Name, nullJSON(c.Config), c.Filter, string(former), c.ID, sc.OrgID, sc.OrgID, c.Version)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notWritten(ctx, tx, "connections", "connection", c.ID, sc)
		}
		tx.announce()
		return nil
	})
}

// CreateEndpoint inserts an endpoint of an existing connection; its org is
// the connection's.
func (s *Store) CreateEndpoint(ctx context.Context, e intake.Endpoint, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		var org string
		err := tx.QueryRowContext(ctx, `SELECT org_id FROM connections WHERE deleted_at IS NULL AND id = ?`, e.ConnectionID).Scan(&org)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && e.OrgID != "" && org != e.OrgID) {
			return notFound("connection", e.ConnectionID)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO endpoints (id, org_id, connection_id, name, token_hash, sealed_token, enabled, max_body_bytes, rate_per_sec, burst, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, org, e.ConnectionID, e.Name, e.TokenHash, e.SealedToken, e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst, ts(e.CreatedAt))
		return err
	})
}

const endpointColumns = `e.id, e.org_id, e.connection_id, e.name, c.provider, e.token_hash, e.sealed_token, e.previous_token_hash, e.previous_sealed_token, e.previous_expires_at,
	e.enabled, e.max_body_bytes, e.rate_per_sec, e.burst, e.created_at, e.version`

func scanEndpoint(row interface{ Scan(...any) error }) (intake.Endpoint, error) {
	var e intake.Endpoint
	var created, previousExpires sql.NullInt64
	err := row.Scan(&e.ID, &e.OrgID, &e.ConnectionID, &e.Name, &e.Provider, &e.TokenHash, &e.SealedToken, &e.PreviousTokenHash, &e.PreviousSealedToken, &previousExpires,
		&e.Enabled, &e.MaxBodyBytes, &e.RatePerSec, &e.Burst, &created, &e.Version)
	e.CreatedAt, e.PreviousExpiresAt = fromTS(created), fromTS(previousExpires)
	return e, err
}

// Endpoint returns one endpoint visible in sc.
func (s *Store) Endpoint(ctx context.Context, sc intake.Scope, id string) (intake.Endpoint, error) {
	e, err := scanEndpoint(s.reader(ctx).QueryRowContext(ctx,
		`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id AND c.deleted_at IS NULL AND e.deleted_at IS NULL
		 WHERE e.id = ?1 AND (?2 = '' OR e.org_id = ?2)`, id, sc.OrgID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, notFound("endpoint", id)
	}
	return e, err
}

// EndpointByTokenHash finds the endpoint ingress was addressed to, by its
// token or the one its last rotation replaced (expired or not: the caller
// judges, intake.Endpoint.AddressedBy).
func (s *Store) EndpointByTokenHash(ctx context.Context, tokenHash []byte) (intake.Endpoint, error) {
	e, err := scanEndpoint(s.reader(ctx).QueryRowContext(ctx,
		`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id AND c.deleted_at IS NULL AND e.deleted_at IS NULL
		 WHERE e.token_hash = ?1 OR e.previous_token_hash = ?1`, tokenHash))
	if errors.Is(err, sql.ErrNoRows) {
		return e, intake.Errorf(intake.ENOTFOUND, "no endpoint has this token")
	}
	return e, err
}

// UpdateEndpoint saves an endpoint's name, enabled flag and limits.
func (s *Store) UpdateEndpoint(ctx context.Context, sc intake.Scope, e intake.Endpoint, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE endpoints SET name = ?, enabled = ?, max_body_bytes = ?, rate_per_sec = ?, burst = ?,
			version = version + 1 WHERE deleted_at IS NULL AND id = ? AND (? = '' OR org_id = ?) AND version = ?`,
			e.Name, e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst, e.ID, sc.OrgID, sc.OrgID, e.Version)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notWritten(ctx, tx, "endpoints", "endpoint", e.ID, sc)
		}
		tx.announce()
		return nil
	})
}

// RotateEndpointToken saves an endpoint's new token and the one it replaced,
// over the version read.
func (s *Store) RotateEndpointToken(ctx context.Context, sc intake.Scope, e intake.Endpoint, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE endpoints SET token_hash = ?, sealed_token = ?, previous_token_hash = ?, previous_sealed_token = ?,
			previous_expires_at = ?, version = version + 1 WHERE deleted_at IS NULL AND id = ? AND (? = '' OR org_id = ?) AND version = ?`,
			e.TokenHash, e.SealedToken, e.PreviousTokenHash, e.PreviousSealedToken, ts(e.PreviousExpiresAt), e.ID, sc.OrgID, sc.OrgID, e.Version)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notWritten(ctx, tx, "endpoints", "endpoint", e.ID, sc)
		}
		tx.announce()
		return nil
	})
}

// ListEndpoints lists the endpoints visible in sc.
func (s *Store) ListEndpoints(ctx context.Context, sc intake.Scope) ([]intake.Endpoint, error) {
	rows, err := s.reader(ctx).QueryContext(ctx,
		`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id AND c.deleted_at IS NULL AND e.deleted_at IS NULL
		 WHERE (?1 = '' OR e.org_id = ?1) ORDER BY e.id`, sc.OrgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []intake.Endpoint
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func nullJSON(b []byte) any {
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	return string(b)
}

// notWritten says why an update over a version wrote nothing: the row is
// gone (or not visible in sc), or another change moved its version since
// it was read.
func notWritten(ctx context.Context, tx *wtx, table, what, id string, sc intake.Scope) error {
	var version int64
	err := tx.QueryRowContext(ctx, `SELECT version FROM `+table+` WHERE deleted_at IS NULL AND id = ?1 AND (?2 = '' OR org_id = ?2)`,
		id, sc.OrgID).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what, id)
	}
	if err != nil {
		return err
	}
	return intake.Errorf(intake.EVERSION, "the %s changed since it was read: it is at version %d now", what, version)
}
