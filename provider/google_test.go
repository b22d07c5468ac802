package provider

import (
	"encoding/json"
	"testing"

	"github.com/intakehq/intake"
)

// A Calendar push notification as https://developers.google.com/calendar/api/guides/push
// shows it; the channel token is the connection's secret.
const googleToken = "target=myApp-myCalendarChannelDest"

func googleRequest(token, state, uri string) *Request {
	return post("", "X-Goog-Channel-ID", "01234567-89ab-cdef-0123456789ab", "X-Goog-Channel-Token", token,
		"X-Goog-Channel-Expiration", "Tue, 19 Nov 2013 01:13:52 GMT", "X-Goog-Resource-ID", "ret08u3rv24htgh289g",
		"X-Goog-Resource-URI", uri, "X-Goog-Resource-State", state, "X-Goog-Message-Number", "10")
}

const googleCalendarURI = "https://www.googleapis.com/calendar/v3/calendars/my_calendar@gmail.com/events"

func TestGoogleAcceptsItsChannelToken(t *testing.T) {
	wantVerified(t, adapter(t, "google").Verify(googleRequest(googleToken, "exists", googleCalendarURI), secrets("old", googleToken), nil))
}

func TestGoogleRejects(t *testing.T) {
	wantAllRejected(t, "google", nil, []rejectCase{
		{"wrong token", googleRequest("target=other", "exists", googleCalendarURI), secrets(googleToken)},
		{"missing token", googleRequest("", "exists", googleCalendarURI), secrets(googleToken)},
		{"no secrets", googleRequest(googleToken, "exists", googleCalendarURI), nil},
	})
}

func TestGoogleTurnsSyncAndExistsIntoChangeNotices(t *testing.T) {
	for state, typ := range map[string]string{"sync": "google.calendar.sync", "exists": "google.calendar.exists"} {
		ev := oneEvent(t, adapter(t, "google"), googleRequest(googleToken, state, googleCalendarURI), nil)
		if ev.Type != typ || ev.Kind != intake.KindChangeNotice || ev.ProviderEventID != "" {
			t.Errorf("%s: type %q kind %q id %q", state, ev.Type, ev.Kind, ev.ProviderEventID)
		}
		if !equalStrings(ev.ObjectIDs, []string{"ret08u3rv24htgh289g", "01234567-89ab-cdef-0123456789ab"}) {
			t.Errorf("ObjectIDs = %v", ev.ObjectIDs)
		}
		var data map[string]string
		if err := json.Unmarshal(ev.Data, &data); err != nil || data["resource_uri"] != googleCalendarURI || data["message_number"] != "10" {
			t.Errorf("Data = %s (%v)", ev.Data, err)
		}
		if _, leaked := data["channel_token"]; leaked {
			t.Error("Data carries the channel token")
		}
	}
}

func TestGoogleNamesDriveChanges(t *testing.T) {
	r := googleRequest(googleToken, "update", "https://www.googleapis.com/drive/v3/files/1a2b?alt=json")
	r.Header.Set("X-Goog-Changed", "content,properties")
	ev := oneEvent(t, adapter(t, "google"), r, nil)
	if ev.Type != "google.drive.update" {
		t.Errorf("type %q", ev.Type)
	}
	if oneEvent(t, adapter(t, "google"), googleRequest(googleToken, "exists", "urn:x"), nil).Type != "google.push.exists" {
		t.Error("a URI naming no Google API is not typed google.push.*")
	}
	_, err := adapter(t, "google").Interpret(googleRequest(googleToken, "", googleCalendarURI), nil)
	wantPermanent(t, err)
}
