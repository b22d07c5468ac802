package provider

import (
	"testing"
	"time"
)

const (
	gitlabToken = "gitlab-secret-token"
	gitlabPush  = `{"object_kind":"push","event_name":"push","ref":"refs/heads/main","project":{"id":15,"name":"Diaspora"},"commits":[]}`
	gitlabMR    = `{"object_kind":"merge_request","event_type":"merge_request","project":{"id":1},` +
		`"object_attributes":{"id":99,"iid":1,"action":"open","updated_at":"2013-12-03T17:23:34Z"}}`
)

func TestGitLabAcceptsItsSecretToken(t *testing.T) {
	r := post(gitlabPush, "X-Gitlab-Token", gitlabToken, "X-Gitlab-Event", "Push Hook")
	wantVerified(t, adapter(t, "gitlab").Verify(r, secrets("retired token", gitlabToken), nil))
}

// GitLab's signing token signs as Standard Webhooks do
// (https://gitlab.com/gitlab-org/gitlab/-/merge_requests/230944), so the
// Standard Webhooks libraries' vector is a GitLab-signed request too.
func TestGitLabVerifiesSigningTokenSignature(t *testing.T) {
	r := post(swBody, "webhook-id", swMsgID, "webhook-timestamp", swTimestamp, "webhook-signature", swSignature,
		"Idempotency-Key", swMsgID)
	r.ReceivedAt = swVectorReceivedAt()
	wantVerified(t, adapter(t, "gitlab").Verify(r, secrets(gitlabToken, swSecret), nil))
}

func TestGitLabRejects(t *testing.T) {
	signed := func(at time.Time) *Request {
		r := post(swBody, "webhook-id", swMsgID, "webhook-timestamp", swTimestamp, "webhook-signature", swSignature)
		r.ReceivedAt = at
		return r
	}
	tampered := signed(swVectorReceivedAt())
	tampered.Body = []byte(`{"test": 1}`)
	tokenOnly := post(gitlabPush, "X-Gitlab-Token", gitlabToken)
	wantAllRejected(t, "gitlab", nil, []rejectCase{
		{"wrong token", post(gitlabPush, "X-Gitlab-Token", "guess"), secrets(gitlabToken)},
		{"token differing in case", post(gitlabPush, "X-Gitlab-Token", "GITLAB-SECRET-TOKEN"), secrets(gitlabToken)},
		{"missing token", post(gitlabPush), secrets(gitlabToken)},
		{"empty secret", post(gitlabPush, "X-Gitlab-Token", ""), secrets("")},
		{"no secrets", tokenOnly, nil},
		{"signing token given as X-Gitlab-Token", post(gitlabPush, "X-Gitlab-Token", swSecret), secrets(swSecret)},
		{"token alone once a signing token is set", tokenOnly, secrets(gitlabToken, swSecret)},
		{"tampered signed body", tampered, secrets(swSecret)},
		{"stale signature", signed(time.Unix(1614265330, 0).Add(6 * time.Minute)), secrets(swSecret)},
		{"future signature", signed(time.Unix(1614265330, 0).Add(-6 * time.Minute)), secrets(swSecret)},
	})
}

func TestGitLabInterpretsPushAndMergeRequest(t *testing.T) {
	push := oneEvent(t, adapter(t, "gitlab"), post(gitlabPush, "X-Gitlab-Event", "Push Hook",
		"Idempotency-Key", "f0bd0a7e-1fd1-4c36-a7c8-c4ba9cc3d0a2", "X-Gitlab-Event-UUID", "other"), nil)
	if push.Type != "gitlab.push" || push.ProviderEventID != "f0bd0a7e-1fd1-4c36-a7c8-c4ba9cc3d0a2" || !equalStrings(push.ObjectIDs, []string{"15"}) {
		t.Fatalf("push: type %q id %q objects %v", push.Type, push.ProviderEventID, push.ObjectIDs)
	}
	mr := oneEvent(t, adapter(t, "gitlab"), post(gitlabMR, "X-Gitlab-Event", "Merge Request Hook", "X-Gitlab-Event-UUID", "u-1"), nil)
	if mr.Type != "gitlab.merge_request.open" || mr.ProviderEventID != "u-1" || !equalStrings(mr.ObjectIDs, []string{"1", "99"}) {
		t.Fatalf("merge request: type %q id %q objects %v", mr.Type, mr.ProviderEventID, mr.ObjectIDs)
	}
	if !mr.OccurredAt.Equal(time.Date(2013, 12, 3, 17, 23, 34, 0, time.UTC)) {
		t.Errorf("OccurredAt = %v", mr.OccurredAt)
	}
}

func TestGitLabNamesSystemHookEventsAndFallsBackToTheHeader(t *testing.T) {
	sys := oneEvent(t, adapter(t, "gitlab"), post(`{"event_name":"project_create","project_id":74}`), nil)
	if sys.Type != "gitlab.project_create" {
		t.Errorf("system hook type %q", sys.Type)
	}
	hdr := oneEvent(t, adapter(t, "gitlab"), post(`{"ref":"v1"}`, "X-Gitlab-Event", "Tag Push Hook"), nil)
	if hdr.Type != "gitlab.tag_push" {
		t.Errorf("header-named type %q", hdr.Type)
	}
	_, err := adapter(t, "gitlab").Interpret(post(`{"ref":"v1"}`), nil)
	wantPermanent(t, err)
}
