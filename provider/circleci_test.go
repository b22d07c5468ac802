package provider

import (
	"testing"
	"time"
)

// CircleCI's published examples, from circleci/circleci-docs,
// jekyll/_cci2/webhooks.adoc ("Validate outbound webhooks"): the table of
// bodies, secrets and v1 signatures, and the Python example's "foo".
var circleciDocVectors = []struct{ body, secret, sig string }{
	{"hello world", "secret", "734cc62f32841568f45715aeb9f4d7891324e6d948e4c6c60c0621cdac48623a"},
	{"lalala", "another-secret", "daa220016c8f29a8b214fbfc3671aeec2145cfb1e6790184ffb38b6d0425fa00"},
	{"an-important-request-payload", "hunter123", "9be2242094a9a8c00c64306f382a7f9d691de910b4a266f67bd314ef18ac49fa"},
	{"foo", "secret", "773ba44693c7553d6ee20f61ea5d2757a9a4f4a44d2841ae4e95b52e4cd62db4"},
}

// The workflow-completed sample of jekyll/_cci2/webhooks-reference.adoc
// (its vcs map shortened), signed below with a known secret.
const (
	circleciSecret       = "circleci-webhook-secret-token"
	circleciWorkflowBody = `{"id":"3888f21b-eaa7-38e3-8f3d-75a63bba8895","type":"workflow-completed","happened_at":"2021-09-01T22:49:34.317Z",` +
		`"webhook":{"id":"cf8c4fdd-0587-4da1-b4ca-4846e9640af9","name":"Sample Webhook"},` +
		`"project":{"id":"84996744-a854-4f5e-aea3-04e2851dc1d2","name":"webhook-service","slug":"github/circleci/webhook-service"},` +
		`"organization":{"id":"f22b6566-597d-46d5-ba74-99ef5bb3d85c","name":"circleci"},` +
		`"workflow":{"id":"fda08377-fe7e-46b1-8992-3a7aaecac9c3","name":"build-test-deploy","created_at":"2021-09-01T22:49:03.616Z","stopped_at":"2021-09-01T22:49:34.170Z","status":"success"},` +
		`"pipeline":{"id":"1285fe1d-d3a6-44fc-8886-8979558254c4","number":130,"created_at":"2021-09-01T22:49:03.544Z","trigger":{"type":"webhook"},"vcs":{"provider_name":"github","branch":"main"}}}`
	circleciJobBody = `{"id":"8bd71c28-4969-3677-8940-3e3a61c46660","type":"job-completed","happened_at":"2021-09-01T22:49:34.279Z",` +
		`"project":{"id":"84996744-a854-4f5e-aea3-04e2851dc1d2"},"workflow":{"id":"fda08377-fe7e-46b1-8992-3a7aaecac9c3"},` +
		`"pipeline":{"id":"1285fe1d-d3a6-44fc-8886-8979558254c4"},` +
		`"job":{"id":"8b91f9a8-7975-4e60-916c-f0152ccbc937","name":"test","status":"success","number":136}}`
)

func circleciRequest(sig, body string) *Request { return post(body, "circleci-signature", sig) }

func TestCircleCIVerifiesDocVectors(t *testing.T) {
	for _, v := range circleciDocVectors {
		t.Run(v.body, func(t *testing.T) {
			wantVerified(t, adapter(t, "circleci").Verify(circleciRequest("v1="+v.sig, v.body), secrets(v.secret), nil))
		})
	}
}

func TestCircleCIAcceptsRotatedSecretsAndIgnoresOtherVersions(t *testing.T) {
	v := circleciDocVectors[0]
	wantVerified(t, adapter(t, "circleci").Verify(circleciRequest("v1="+v.sig, v.body), secrets("retired", v.secret), nil))
	// Later versions beside v1, as CircleCI's header format allows.
	wantVerified(t, adapter(t, "circleci").Verify(circleciRequest("v1="+v.sig+",v2=abcdef,v3=...", v.body), secrets(v.secret), nil))
	two := "v1=" + sha256Hex("new-secret", v.body) + ", v1=" + v.sig
	wantVerified(t, adapter(t, "circleci").Verify(circleciRequest(two, v.body), secrets(v.secret), nil))
}

func TestCircleCIRejects(t *testing.T) {
	v := circleciDocVectors[2]
	wantAllRejected(t, "circleci", nil, []rejectCase{
		{"tampered body", circleciRequest("v1="+v.sig, v.body+"!"), secrets(v.secret)},
		{"wrong secret", circleciRequest("v1="+v.sig, v.body), secrets("hunter124")},
		{"no secrets", circleciRequest("v1="+v.sig, v.body), nil},
		{"empty secret", circleciRequest("v1="+sha256Hex("", v.body), v.body), secrets("")},
		{"missing header", circleciRequest("", v.body), secrets(v.secret)},
		{"no version", circleciRequest(v.sig, v.body), secrets(v.secret)},
		{"only an unknown version", circleciRequest("v2="+v.sig, v.body), secrets(v.secret)},
		{"not hex (docs' invalid example)", circleciRequest("v1=not-a-valid-signature", v.body), secrets(v.secret)},
	})
}

func TestCircleCIInterpretsWorkflowAndJobCompleted(t *testing.T) {
	r := circleciRequest("v1="+sha256Hex(circleciSecret, circleciWorkflowBody), circleciWorkflowBody)
	wantVerified(t, adapter(t, "circleci").Verify(r, secrets(circleciSecret), nil))
	ev := oneEvent(t, adapter(t, "circleci"), r, nil)
	if ev.Type != "circleci.workflow-completed" || ev.ProviderEventID != "3888f21b-eaa7-38e3-8f3d-75a63bba8895" {
		t.Fatalf("got type %q id %q", ev.Type, ev.ProviderEventID)
	}
	if !equalStrings(ev.ObjectIDs, []string{"fda08377-fe7e-46b1-8992-3a7aaecac9c3", "1285fe1d-d3a6-44fc-8886-8979558254c4", "84996744-a854-4f5e-aea3-04e2851dc1d2"}) {
		t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
	}
	if want := time.Date(2021, 9, 1, 22, 49, 34, 317e6, time.UTC); !ev.OccurredAt.Equal(want) {
		t.Errorf("OccurredAt = %v", ev.OccurredAt)
	}
	if string(ev.Data) != circleciWorkflowBody {
		t.Errorf("Data = %s", ev.Data)
	}

	// The body's type wins over the unsigned header.
	job := oneEvent(t, adapter(t, "circleci"), post(circleciJobBody, "circleci-event-type", "workflow-completed"), nil)
	if job.Type != "circleci.job-completed" || job.ProviderEventID != "8bd71c28-4969-3677-8940-3e3a61c46660" || job.ObjectIDs[0] != "8b91f9a8-7975-4e60-916c-f0152ccbc937" {
		t.Fatalf("got type %q id %q objects %v", job.Type, job.ProviderEventID, job.ObjectIDs)
	}
}

func TestCircleCIRefusesAnUntypedBody(t *testing.T) {
	_, err := adapter(t, "circleci").Interpret(post(`{"id":"x"}`), nil)
	wantPermanent(t, err)
}
