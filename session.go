package intake

import "time"

// ConsoleSession is a signed-in console browser. It lives in the store, so
// every process of a deployment accepts it, a restart keeps it, and a
// sign-out ends it everywhere. The cookie's random value is never stored,
// only its SHA-256, so a database leak hands out no working session.
type ConsoleSession struct {
	IDHash []byte // SHA-256 of the cookie value
	OrgID  string // "" for staff
	// OrgName is the org's name, filled in by reads.
	OrgName string
	// KeyHash is the SHA-256 of the credential signed in with. An org's
	// session works only while that API key is unrevoked; a staff session,
	// only while the staff token still hashes to it. A person's session
	// (Subject set) has none.
	KeyHash []byte
	// Subject and Email name the person who signed in with single sign-on;
	// "" for a token's session. A person's session lasts until it expires,
	// is signed out or its org is deleted: what the people map gave them at
	// sign-in holds until then, and a change to it applies at their next.
	Subject   string
	Email     string
	Role      Role   // a person's role in OrgID; "" for staff and tokens
	Actor     string // who the audit log names
	CSRF      string // the token each of the session's forms carries
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt time.Time // zero until signed out
}
