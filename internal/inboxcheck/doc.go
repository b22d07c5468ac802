// Package inboxcheck tests package inbox (github.com/intakehq/intake/inbox,
// a module of its own) where its own tests cannot: on real SQLite,
// PostgreSQL and MariaDB databases through their drivers, against the
// envelope intake sends and the signatures intake's sender makes. The inbox
// module imports only the standard library, its tests included; the drivers
// and intake's packages these tests need stay in intake's module.
package inboxcheck
