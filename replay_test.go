package intake

import (
	"errors"
	"testing"
)

func TestRerouteOutcomePassesOverWhatIsNoLongerReroutableAndStopsOnTheRest(t *testing.T) {
	for _, c := range []struct {
		err         error
		done, stops bool
	}{
		{nil, true, false},
		{Errorf(ECONFLICT, "event is delivered"), false, false},
		{Errorf(ENOTFOUND, "no event"), false, false},
		{errors.New("disk I/O error"), false, true},
		{Errorf(EINVALID, "malformed id"), false, true},
	} {
		done, stop := RerouteOutcome(c.err)
		if done != c.done || (stop != nil) != c.stops || (stop != nil && stop != c.err) {
			t.Errorf("%v: done %v, stop %v; want done %v, stopping %v", c.err, done, stop, c.done, c.stops)
		}
	}
}
