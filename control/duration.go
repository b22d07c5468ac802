package control

import (
	"time"

	"github.com/intakehq/intake"
)

// ParseDuration reads a setting given as a Go duration ("30s", "72h"),
// failing with EINVALID that names the field and shows example, so that
// every transport refuses a bad one with the same words.
func ParseDuration(field, v, example string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, intake.Errorf(intake.EINVALID, "%s must be a duration such as %q", field, example)
	}
	return d, nil
}
