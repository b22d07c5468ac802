package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/intakehq/intake"
)

// CreateOrg inserts an org with the hash of its API key.
func (s *Store) CreateOrg(ctx context.Context, o intake.Org, apiKeyHash []byte) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO orgs (id, name, api_key_hash, created_at) VALUES ($1, $2, $3, $4)`,
			o.ID, o.Name, apiKeyHash, ts(o.CreatedAt))
		return err
	})
}

// OrgByKeyHash finds the org an API key belongs to.
func (s *Store) OrgByKeyHash(ctx context.Context, apiKeyHash []byte) (intake.Org, error) {
	var o intake.Org
	var created *time.Time
	err := s.pool.QueryRow(ctx, `SELECT id, name, created_at FROM orgs WHERE api_key_hash = $1`, apiKeyHash).
		Scan(&o.ID, &o.Name, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, intake.Errorf(intake.ENOTFOUND, "no org has this key")
	}
	o.CreatedAt = fromTS(created)
	return o, unavailable(err)
}

// ListOrgs lists the orgs visible in sc.
func (s *Store) ListOrgs(ctx context.Context, sc intake.Scope) ([]intake.Org, error) {
	var out []intake.Org
	err := s.read(ctx, sc, func(q querier) error {
		rows, err := q.Query(ctx, `SELECT id, name, created_at FROM orgs WHERE ($1::uuid IS NULL OR id = $1) ORDER BY id`, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (intake.Org, error) {
			var o intake.Org
			var created *time.Time
			err := row.Scan(&o.ID, &o.Name, &created)
			o.CreatedAt = fromTS(created)
			return o, err
		})
		return err
	})
	return out, err
}

// CreateConnection inserts a connection; its org must exist.
func (s *Store) CreateConnection(ctx context.Context, c intake.Connection) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := orgExists(ctx, tx, c.OrgID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO connections (id, org_id, provider, name, sealed_secrets, config, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			c.ID, c.OrgID, c.Provider, c.Name, c.SealedSecrets, nullJSON(c.Config), ts(c.CreatedAt))
		return err
	})
}

func orgExists(ctx context.Context, q querier, orgID string) error {
	if !validIDs(orgID) {
		return notFound("org", orgID)
	}
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM orgs WHERE id = $1`, orgID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("org", orgID)
	}
	return err
}

const connectionColumns = `id, org_id, provider, name, sealed_secrets, config, created_at`

func scanConnection(row pgx.Row) (intake.Connection, error) {
	var c intake.Connection
	var config []byte
	var created *time.Time
	err := row.Scan(&c.ID, &c.OrgID, &c.Provider, &c.Name, &c.SealedSecrets, &config, &created)
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
	err := s.read(ctx, sc, func(q querier) error {
		var err error
		c, err = scanConnection(q.QueryRow(ctx,
			`SELECT `+connectionColumns+` FROM connections WHERE id = $1 AND ($2::uuid IS NULL OR org_id = $2)`, connID, nullID(sc.OrgID)))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("connection", connID)
		}
		return err
	})
	return c, err
}

// ListConnections lists the connections visible in sc.
func (s *Store) ListConnections(ctx context.Context, sc intake.Scope) ([]intake.Connection, error) {
	var out []intake.Connection
	err := s.read(ctx, sc, func(q querier) error {
		rows, err := q.Query(ctx,
			`SELECT `+connectionColumns+` FROM connections WHERE ($1::uuid IS NULL OR org_id = $1) ORDER BY id`, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (intake.Connection, error) { return scanConnection(row) })
		return err
	})
	return out, err
}

// ReplaceConnectionSecrets swaps a connection's sealed secret list.
func (s *Store) ReplaceConnectionSecrets(ctx context.Context, sc intake.Scope, connID string, sealed []byte) error {
	if !validIDs(connID) {
		return notFound("connection", connID)
	}
	return s.scopedTx(ctx, sc, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE connections SET sealed_secrets = $1 WHERE id = $2 AND ($3::uuid IS NULL OR org_id = $3)`,
			sealed, connID, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("connection", connID)
		}
		return nil
	})
}

// CreateEndpoint inserts an endpoint of an existing connection; its org is
// the connection's.
func (s *Store) CreateEndpoint(ctx context.Context, e intake.Endpoint) error {
	if !validIDs(e.ConnectionID) {
		return notFound("connection", e.ConnectionID)
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		var org string
		err := tx.QueryRow(ctx, `SELECT org_id FROM connections WHERE id = $1`, e.ConnectionID).Scan(&org)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && e.OrgID != "" && org != e.OrgID) {
			return notFound("connection", e.ConnectionID)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO endpoints (id, org_id, connection_id, token_hash, sealed_token, enabled, max_body_bytes, rate_per_sec, burst, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			e.ID, org, e.ConnectionID, e.TokenHash, e.SealedToken, e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst, ts(e.CreatedAt))
		return err
	})
}

const endpointColumns = `e.id, e.org_id, e.connection_id, c.provider, e.token_hash, e.sealed_token, e.enabled, e.max_body_bytes, e.rate_per_sec, e.burst, e.created_at`

func scanEndpoint(row pgx.Row) (intake.Endpoint, error) {
	var e intake.Endpoint
	var created *time.Time
	var burst int32
	err := row.Scan(&e.ID, &e.OrgID, &e.ConnectionID, &e.Provider, &e.TokenHash, &e.SealedToken, &e.Enabled, &e.MaxBodyBytes, &e.RatePerSec, &burst, &created)
	e.Burst, e.CreatedAt = int(burst), fromTS(created)
	return e, err
}

// Endpoint returns one endpoint visible in sc.
func (s *Store) Endpoint(ctx context.Context, sc intake.Scope, epID string) (intake.Endpoint, error) {
	var e intake.Endpoint
	if !validIDs(epID) {
		return e, notFound("endpoint", epID)
	}
	err := s.read(ctx, sc, func(q querier) error {
		var err error
		e, err = scanEndpoint(q.QueryRow(ctx,
			`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id
			 WHERE e.id = $1 AND ($2::uuid IS NULL OR e.org_id = $2)`, epID, nullID(sc.OrgID)))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("endpoint", epID)
		}
		return err
	})
	return e, err
}

// EndpointByTokenHash finds the endpoint ingress was addressed to.
func (s *Store) EndpointByTokenHash(ctx context.Context, tokenHash []byte) (intake.Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx,
		`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id WHERE e.token_hash = $1`, tokenHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, intake.Errorf(intake.ENOTFOUND, "no endpoint has this token")
	}
	return e, unavailable(err)
}

// UpdateEndpoint saves an endpoint's enabled flag and limits.
func (s *Store) UpdateEndpoint(ctx context.Context, sc intake.Scope, e intake.Endpoint) error {
	if !validIDs(e.ID) {
		return notFound("endpoint", e.ID)
	}
	return s.scopedTx(ctx, sc, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE endpoints SET enabled = $1, max_body_bytes = $2, rate_per_sec = $3, burst = $4
			WHERE id = $5 AND ($6::uuid IS NULL OR org_id = $6)`,
			e.Enabled, e.MaxBodyBytes, e.RatePerSec, e.Burst, e.ID, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("endpoint", e.ID)
		}
		return nil
	})
}

// ListEndpoints lists the endpoints visible in sc.
func (s *Store) ListEndpoints(ctx context.Context, sc intake.Scope) ([]intake.Endpoint, error) {
	var out []intake.Endpoint
	err := s.read(ctx, sc, func(q querier) error {
		rows, err := q.Query(ctx,
			`SELECT `+endpointColumns+` FROM endpoints e JOIN connections c ON c.id = e.connection_id
			 WHERE ($1::uuid IS NULL OR e.org_id = $1) ORDER BY e.id`, nullID(sc.OrgID))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (intake.Endpoint, error) { return scanEndpoint(row) })
		return err
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
