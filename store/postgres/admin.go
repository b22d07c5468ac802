package postgres

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/intakehq/intake"
)

// CreateOrg inserts an org with its first API key.
func (s *Store) CreateOrg(ctx context.Context, o intake.Org, key intake.APIKey, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)`,
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

func insertKey(ctx context.Context, tx pgx.Tx, k intake.APIKey) error {
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, org_id, prefix, key_hash, name, role, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.OrgID, k.Prefix, k.Hash, k.Name, string(cmp.Or(k.Role, intake.RoleAdmin)), ts(k.CreatedAt))
	return err
}

// OrgByKeyHash finds the org of an unrevoked API key, and the key's role.
func (s *Store) OrgByKeyHash(ctx context.Context, apiKeyHash []byte) (intake.Org, intake.Role, error) {
	var o intake.Org
	var role string
	var created *time.Time
	err := s.poolFor(ctx).QueryRow(ctx, `SELECT o.id, o.name, o.created_at, o.version, k.role FROM api_keys k JOIN orgs o ON o.id = k.org_id
		WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND o.deleted_at IS NULL`, apiKeyHash).Scan(&o.ID, &o.Name, &created, &o.Version, &role)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, "", intake.Errorf(intake.ENOTFOUND, "no org has this key")
	}
	o.CreatedAt = fromTS(created)
	return o, intake.Role(role), classify(err)
}

// CreateAPIKey adds a key to an org visible in sc.
func (s *Store) CreateAPIKey(ctx context.Context, sc intake.Scope, k intake.APIKey, audit ...intake.AuditEntry) error {
	if !sc.Allows(k.OrgID) {
		return notFound("org", k.OrgID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		if err := orgExists(ctx, tx, k.OrgID); err != nil {
			return err
		}
		return insertKey(ctx, tx, k)
	})
}

// ListAPIKeys lists the keys visible in sc, revoked ones too.
func (s *Store) ListAPIKeys(ctx context.Context, sc intake.Scope) ([]intake.APIKey, error) {
	var out []intake.APIKey
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanAPIKey, `SELECT id, org_id, prefix, name, role, created_at, revoked_at FROM api_keys
			WHERE ($1::uuid IS NULL OR org_id = $1) ORDER BY id`, nullID(sc.OrgID))
	})
	return out, err
}

func scanAPIKey(row pgx.Row) (intake.APIKey, error) {
	var k intake.APIKey
	var role string
	var created, revoked *time.Time
	err := row.Scan(&k.ID, &k.OrgID, &k.Prefix, &k.Name, &role, &created, &revoked)
	k.Role, k.CreatedAt, k.RevokedAt = intake.Role(role), fromTS(created), fromTS(revoked)
	return k, err
}

// RevokeAPIKey stops a key visible in sc; revoking it again keeps the
// first revocation's time.
func (s *Store) RevokeAPIKey(ctx context.Context, sc intake.Scope, keyID string, at time.Time, audit ...intake.AuditEntry) error {
	if !validIDs(keyID) {
		return notFound("api key", keyID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 AND ($3::uuid IS NULL OR org_id = $3)`,
			ts(at), keyID, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("api key", keyID)
		}
		return s.announce(ctx, tx)
	})
}

// ListOrgs lists the live orgs visible in sc.
func (s *Store) ListOrgs(ctx context.Context, sc intake.Scope) ([]intake.Org, error) {
	var out []intake.Org
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanOrg, `SELECT id, name, created_at, coalesce(body_retention_us, 0), coalesce(retention_us, 0), version
			FROM orgs WHERE deleted_at IS NULL AND ($1::uuid IS NULL OR id = $1) ORDER BY id`, nullID(sc.OrgID))
	})
	return out, err
}

func scanOrg(row pgx.Row) (intake.Org, error) {
	var o intake.Org
	var created *time.Time
	var body, meta int64
	err := row.Scan(&o.ID, &o.Name, &created, &body, &meta, &o.Version)
	o.CreatedAt = fromTS(created)
	o.BodyRetention, o.Retention = time.Duration(body)*time.Microsecond, time.Duration(meta)*time.Microsecond
	return o, err
}

// UpdateOrg saves an org's name and retention overrides over the version
// it read.
func (s *Store) UpdateOrg(ctx context.Context, sc intake.Scope, o intake.Org, audit ...intake.AuditEntry) error {
	if !validIDs(o.ID) {
		return notFound("org", o.ID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE orgs SET name = $1, body_retention_us = nullif($2::bigint, 0), retention_us = nullif($3::bigint, 0), version = version + 1
			WHERE deleted_at IS NULL AND id = $4 AND ($5::uuid IS NULL OR id = $5) AND version = $6`,
			o.Name, o.BodyRetention.Microseconds(), o.Retention.Microseconds(), o.ID, nullID(sc.OrgID), o.Version)
		if err != nil {
			return orgNameTaken(err, o.Name)
		}
		if tag.RowsAffected() == 0 {
			var version int64
			err := tx.QueryRow(ctx, `SELECT version FROM orgs WHERE deleted_at IS NULL AND id = $1 AND ($2::uuid IS NULL OR id = $2)`,
				o.ID, nullID(sc.OrgID)).Scan(&version)
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("org", o.ID)
			}
			if err != nil {
				return err
			}
			return intake.Errorf(intake.EVERSION, "the org changed since it was read: it is at version %d now", version)
		}
		return s.announce(ctx, tx)
	})
}

// orgNameTaken names the conflict when another live org holds name: the
// index that keeps live names unique refused the write.
func orgNameTaken(err error, name string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "orgs_live_name" {
		return intake.Errorf(intake.ECONFLICT, "an org named %.64q exists already", name)
	}
	return err
}

// CreateConnection inserts a connection; its org must exist.
func (s *Store) CreateConnection(ctx context.Context, c intake.Connection, audit ...intake.AuditEntry) error {
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		if err := orgExists(ctx, tx, c.OrgID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO connections (id, org_id, provider, name, sealed_secrets, config, created_at, filter)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			c.ID, c.OrgID, c.Provider, c.Name, c.SealedSecrets, nullJSON(c.Config), ts(c.CreatedAt), text(c.Filter))
		return err
	})
}

func orgExists(ctx context.Context, q querier, orgID string) error {
	if !validIDs(orgID) {
		return notFound("org", orgID)
	}
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM orgs WHERE deleted_at IS NULL AND id = $1`, orgID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("org", orgID)
	}
	return err
}

const connectionColumns = `id, org_id, provider, name, sealed_secrets, config, created_at, filter, version, former_credential_headers`

func scanConnection(row pgx.Row) (intake.Connection, error) {
	var c intake.Connection
	var config []byte
	var created *time.Time
	err := row.Scan(&c.ID, &c.OrgID, &c.Provider, &c.Name, &c.SealedSecrets, &config, &created, &c.Filter, &c.Version, &c.FormerCredentialHeaders)
	if len(c.FormerCredentialHeaders) == 0 {
		c.FormerCredentialHeaders = nil
	}
	if config != nil {
		c.Config = config
	}
	c.CreatedAt = fromTS(created)
	return c, err
}

// Connection returns one connection visible in sc.
func (s *Store) Connection(ctx context.Context, sc intake.Scope, connID string) (intake.Connection, error) {
	var c intake.Connection
	if !validIDs(connID) {
		return c, notFound("connection", connID)
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+connectionColumns+` FROM connections WHERE deleted_at IS NULL AND id = $1 AND ($2::uuid IS NULL OR org_id = $2)`, connID, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) (err error) { c, err = scanConnection(row); return err })
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFound("connection", connID)
	}
	return c, err
}

// ListConnections lists the connections visible in sc.
func (s *Store) ListConnections(ctx context.Context, sc intake.Scope) ([]intake.Connection, error) {
	var out []intake.Connection
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanConnection,
			`SELECT `+connectionColumns+` FROM connections WHERE deleted_at IS NULL AND ($1::uuid IS NULL OR org_id = $1) ORDER BY id`, nullID(sc.OrgID))
	})
	return out, err
}

// ReplaceConnectionSecrets swaps a connection's sealed secret list.
func (s *Store) ReplaceConnectionSecrets(ctx context.Context, sc intake.Scope, connID string, sealed []byte, audit ...intake.AuditEntry) error {
	if !validIDs(connID) {
		return notFound("connection", connID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE connections SET sealed_secrets = $1, version = version + 1 WHERE deleted_at IS NULL AND id = $2 AND ($3::uuid IS NULL OR org_id = $3)`,
			sealed, connID, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("connection", connID)
		}
		return s.announce(ctx, tx)
	})
}

// UpdateConnection saves a connection's name, config and filter.
func (s *Store) UpdateConnection(ctx context.Context, sc intake.Scope, c intake.Connection, audit ...intake.AuditEntry) error {
	if !validIDs(c.ID) {
		return notFound("connection", c.ID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE connections SET name = $1, config = $2, filter = $3, former_credential_headers = $7, version = version + 1
			WHERE deleted_at IS NULL AND id = $4 AND ($5::uuid IS NULL OR org_id = $5) AND version = $6`,
			text(c.Name), nullJSON(c.Config), text(c.Filter), c.ID, nullID(sc.OrgID), c.Version, texts(c.FormerCredentialHeaders))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notWritten(ctx, tx, "connections", "connection", c.ID, sc)
		}
		return s.announce(ctx, tx)
	})
}

// CreateEndpoint inserts an endpoint of an existing connection; its org is
// the connection's.
func (s *Store) CreateEndpoint(ctx context.Context, e intake.Endpoint, audit ...intake.AuditEntry) error {
	if !validIDs(e.ConnectionID) {
		return notFound("connection", e.ConnectionID)
	}
	return s.audited(ctx, audit, func(tx pgx.Tx) error {
		var org string
		err := tx.QueryRow(ctx, `SELECT org_id FROM connections WHERE deleted_at IS NULL AND id = $1`, e.ConnectionID).Scan(&org)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && e.OrgID != "" && org != e.OrgID) {
			return notFound("connection", e.ConnectionID)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO endpoints (id, org_id, connection_id, name, token_hash, sealed_token, enabled, max_body_bytes, rate_per_sec, burst, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			e.ID, org, e.ConnectionID, e.Name, e.TokenHash, e.SealedToken, e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst, ts(e.CreatedAt))
		return err
	})
}

const endpointColumns = `e.id, e.org_id, e.connection_id, e.name, c.provider, e.token_hash, e.sealed_token, e.previous_token_hash, e.previous_sealed_token, e.previous_expires_at,
	e.enabled, e.max_body_bytes, e.rate_per_sec, e.burst, e.created_at, e.version`

func scanEndpoint(row pgx.Row) (intake.Endpoint, error) {
	var e intake.Endpoint
	var created, previousExpires *time.Time
	var burst int32
	err := row.Scan(&e.ID, &e.OrgID, &e.ConnectionID, &e.Name, &e.Provider, &e.TokenHash, &e.SealedToken, &e.PreviousTokenHash, &e.PreviousSealedToken, &previousExpires,
		&e.Enabled, &e.MaxBodyBytes, &e.RatePerSec, &burst, &created, &e.Version)
	e.Burst, e.CreatedAt, e.PreviousExpiresAt = int(burst), fromTS(created), fromTS(previousExpires)
	return e, err
}

// Endpoint returns one endpoint visible in sc.
func (s *Store) Endpoint(ctx context.Context, sc intake.Scope, epID string) (intake.Endpoint, error) {
	var e intake.Endpoint
	if !validIDs(epID) {
		return e, notFound("endpoint", epID)
	}
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		b.Queue(`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id AND c.deleted_at IS NULL AND e.deleted_at IS NULL
			 WHERE e.id = $1 AND ($2::uuid IS NULL OR e.org_id = $2)`, epID, nullID(sc.OrgID)).
			QueryRow(func(row pgx.Row) (err error) { e, err = scanEndpoint(row); return err })
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return e, notFound("endpoint", epID)
	}
	return e, err
}

// EndpointByTokenHash finds the endpoint ingress was addressed to, by its
// token or the one its last rotation replaced (expired or not: the caller
// judges, intake.Endpoint.AddressedBy).
func (s *Store) EndpointByTokenHash(ctx context.Context, tokenHash []byte) (intake.Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx,
		`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id AND c.deleted_at IS NULL AND e.deleted_at IS NULL
		 WHERE e.token_hash = $1 OR e.previous_token_hash = $1`, tokenHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, intake.Errorf(intake.ENOTFOUND, "no endpoint has this token")
	}
	return e, classify(err)
}

// UpdateEndpoint saves an endpoint's name, enabled flag and limits.
func (s *Store) UpdateEndpoint(ctx context.Context, sc intake.Scope, e intake.Endpoint, audit ...intake.AuditEntry) error {
	if !validIDs(e.ID) {
		return notFound("endpoint", e.ID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE endpoints SET name = $1, enabled = $2, max_body_bytes = $3, rate_per_sec = $4, burst = $5,
			version = version + 1 WHERE deleted_at IS NULL AND id = $6 AND ($7::uuid IS NULL OR org_id = $7) AND version = $8`,
			e.Name, e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst, e.ID, nullID(sc.OrgID), e.Version)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notWritten(ctx, tx, "endpoints", "endpoint", e.ID, sc)
		}
		return s.announce(ctx, tx)
	})
}

// RotateEndpointToken saves an endpoint's new token and the one it replaced,
// over the version read.
func (s *Store) RotateEndpointToken(ctx context.Context, sc intake.Scope, e intake.Endpoint, audit ...intake.AuditEntry) error {
	if !validIDs(e.ID) {
		return notFound("endpoint", e.ID)
	}
	return s.auditedScoped(ctx, sc, audit, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE endpoints SET token_hash = $1, sealed_token = $2, previous_token_hash = $3, previous_sealed_token = $4,
			previous_expires_at = $5, version = version + 1 WHERE deleted_at IS NULL AND id = $6 AND ($7::uuid IS NULL OR org_id = $7) AND version = $8`,
			e.TokenHash, e.SealedToken, e.PreviousTokenHash, e.PreviousSealedToken, ts(e.PreviousExpiresAt), e.ID, nullID(sc.OrgID), e.Version)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notWritten(ctx, tx, "endpoints", "endpoint", e.ID, sc)
		}
		return s.announce(ctx, tx)
	})
}

// ListEndpoints lists the endpoints visible in sc.
func (s *Store) ListEndpoints(ctx context.Context, sc intake.Scope) ([]intake.Endpoint, error) {
	var out []intake.Endpoint
	err := s.read(ctx, sc, func(b *pgx.Batch) {
		queueRows(b, &out, scanEndpoint, `SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id AND c.deleted_at IS NULL AND e.deleted_at IS NULL
			 WHERE ($1::uuid IS NULL OR e.org_id = $1) ORDER BY e.id`, nullID(sc.OrgID))
	})
	return out, err
}

// nullJSON is a JSON parameter: NULL when blank.
func nullJSON(b []byte) any {
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	return string(b)
}

// notWritten says why an update over a version wrote nothing: the row is
// gone (or not visible in sc), or another change moved its version since
// it was read.
func notWritten(ctx context.Context, tx pgx.Tx, table, what, id string, sc intake.Scope) error {
	var version int64
	err := tx.QueryRow(ctx, `SELECT version FROM `+table+` WHERE deleted_at IS NULL AND id = $1 AND ($2::uuid IS NULL OR org_id = $2)`,
		id, nullID(sc.OrgID)).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(what, id)
	}
	if err != nil {
		return err
	}
	return intake.Errorf(intake.EVERSION, "the %s changed since it was read: it is at version %d now", what, version)
}
