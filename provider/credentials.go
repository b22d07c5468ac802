package provider

import (
	"slices"

	"github.com/intakehq/intake"
)

// CredentialHeaderer is an adapter whose config may name a header that
// carries the connection's credential (Okta's auth_header). Wherever a
// message's headers are shown or handed to rules, that header is hidden as
// Authorization is; the fixed word list of internal/redact cannot know a
// name the operator chose.
type CredentialHeaderer interface {
	// CredentialHeaders are the header names cfg makes credentials; none
	// when the adapter's defaults are already on the word list.
	CredentialHeaders(cfg Config) []string
}

// CredentialHeaders returns the header names a connection makes
// credentials: those its config names now, and those it named before
// (cn.FormerCredentialHeaders), which messages stored then still carry.
// A provider that names none, or a config that does not parse (control
// refuses such a config when it is written), adds none of its own.
func CredentialHeaders(cn intake.Connection) []string {
	names := slices.Clone(cn.FormerCredentialHeaders)
	a, ok := Lookup(cn.Provider)
	if !ok {
		return names
	}
	ch, ok := a.(CredentialHeaderer)
	if !ok {
		return names
	}
	cfg, err := ParseConfig(cn.Config)
	if err != nil {
		return names
	}
	return append(names, ch.CredentialHeaders(cfg)...)
}
