package postgres

import (
	"context"
	"strings"
	"testing"
)

// sharedTables hold no org's rows, so row-level security has nothing to
// confine there; intake_tenant may not touch them at all.
var sharedTables = map[string]string{
	"goose_db_version": "the migrations applied",
	"meta":             "facts about the store itself: the master key's fingerprint",
}

// TestEveryTableIsOrgOwnedUnderRowLevelSecurityOrShared reads the schema's
// catalog after the migrations: every table either is org-owned, with
// row-level security enabled and an intake_tenant policy that compares its
// org column with intake.org_id for reads and for writes, or is declared
// shared and out of intake_tenant's reach. A migration that adds a table
// without a policy fails here, and a new org-owned table must be added to
// orgColumn, so TestOrgScopedTransactionSeesNoOtherOrgsRows exercises it.
func TestEveryTableIsOrgOwnedUnderRowLevelSecurityOrShared(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	rows, err := s.pool.Query(ctx, `SELECT c.relname, c.relrowsecurity,
			EXISTS (SELECT FROM information_schema.columns k WHERE k.table_schema = n.nspname AND k.table_name = c.relname AND k.column_name = 'org_id'),
			has_table_privilege('intake_tenant', c.oid, 'SELECT, INSERT, UPDATE, DELETE')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
		ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	type table struct {
		rls, hasOrgID, tenantMayUse bool
	}
	tables := map[string]table{}
	for rows.Next() {
		var name string
		var tb table
		if err := rows.Scan(&name, &tb.rls, &tb.hasOrgID, &tb.tenantMayUse); err != nil {
			t.Fatal(err)
		}
		tables[name] = tb
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) < len(orgColumn) {
		t.Fatalf("the catalog lists %d tables, fewer than the %d org-owned ones: the query reads the wrong schema", len(tables), len(orgColumn))
	}

	for name := range orgColumn {
		if _, ok := tables[name]; !ok {
			t.Errorf("org-owned table %s is not in the schema", name)
		}
	}
	for name, tb := range tables {
		col, owned := orgColumn[name]
		_, shared := sharedTables[name]
		switch {
		case !owned && !shared:
			t.Errorf("table %s is neither org-owned (orgColumn, with a policy) nor declared shared", name)
		case shared && tb.tenantMayUse:
			t.Errorf("shared table %s is open to intake_tenant", name)
		case shared && tb.hasOrgID:
			t.Errorf("shared table %s has an org_id column: an org's rows belong under row-level security", name)
		case owned && !tb.rls:
			t.Errorf("org-owned table %s does not have row-level security enabled", name)
		}
		if !owned {
			continue
		}
		policies, err := s.pool.Query(ctx, `SELECT policyname, cmd, coalesce(qual, ''), coalesce(with_check, '')
			FROM pg_policies WHERE schemaname = current_schema() AND tablename = $1 AND 'intake_tenant' = ANY(roles)`, name)
		if err != nil {
			t.Fatal(err)
		}
		var reads, writes bool
		for policies.Next() {
			var policy, cmd, using, check string
			if err := policies.Scan(&policy, &cmd, &using, &check); err != nil {
				t.Fatal(err)
			}
			bindsOrg := func(expr string) bool {
				return strings.Contains(expr, "intake.org_id") && strings.Contains(expr, "("+col+" = ")
			}
			if (cmd == "ALL" || cmd == "SELECT") && bindsOrg(using) {
				reads = true
			}
			if (cmd == "ALL" || cmd == "INSERT") && bindsOrg(check) {
				writes = true
			}
		}
		if err := policies.Err(); err != nil {
			t.Fatal(err)
		}
		if !reads || !writes {
			t.Errorf("org-owned table %s: an intake_tenant policy binding %s to intake.org_id for reads: %v, for writes: %v", name, col, reads, writes)
		}
	}
}
