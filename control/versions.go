package control

import "github.com/intakehq/intake"

// casTries bounds how often a change is made again after losing a race to
// another change of the same row.
const casTries = 8

// compareAndSet runs change, a read → modify → write of one row written
// only over the version it read (the store refuses it with EVERSION
// otherwise), until it is written. A change made over the version the
// caller read (If-Match: want is not 0) is not made again: it is refused,
// since what the caller saw is not what is there now.
func compareAndSet[T any](want int64, change func() (T, error)) (T, error) {
	for try := 1; ; try++ {
		v, err := change()
		if intake.ErrorCode(err) != intake.EVERSION || want != 0 || try == casTries {
			return v, err
		}
	}
}

// checkVersion refuses a change made over a version of what that is not
// the row's now.
func checkVersion(what string, want, now int64) error {
	if want != 0 && want != now {
		return intake.Errorf(intake.EVERSION, "the %s changed since version %d was read: it is at version %d now", what, want, now)
	}
	return nil
}
