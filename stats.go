package intake

import (
	"slices"
	"time"
)

// StatsWindow is the span of a consumer's history (DESIGN §20): 24 hours
// by the hour, or 7 days by the day, each ending with the current one
// (UTC).
type StatsWindow string

// Stats windows.
const (
	StatsDay  StatsWindow = "24h"
	StatsWeek StatsWindow = "7d"
)

// Buckets returns the start of the window's first bucket, the buckets'
// width and their number, for a window ending with the bucket holding now.
func (w StatsWindow) Buckets(now time.Time) (start time.Time, width time.Duration, n int, err error) {
	now = now.UTC()
	switch w {
	case StatsDay:
		return now.Truncate(time.Hour).Add(-23 * time.Hour), time.Hour, 24, nil
	case StatsWeek:
		day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		return day.AddDate(0, 0, -6), 24 * time.Hour, 7, nil
	}
	return time.Time{}, 0, 0, Errorf(EINVALID, "window must be 24h or 7d, not %q", w)
}

// DeliveryBucket is a consumer's calls in one hour or day: those that
// succeeded (Delivered) and failed, and the latencies of all of them.
type DeliveryBucket struct {
	Start             time.Time
	Delivered, Failed int
	P50, P99          time.Duration
}

// DeliveryCall is one call as a consumer's history counts it.
type DeliveryCall struct {
	At      time.Time
	Failed  bool
	Latency time.Duration
}

// BucketCalls counts calls into the window's buckets; calls outside the
// window are left out. Percentiles are by nearest rank.
func BucketCalls(w StatsWindow, now time.Time, calls []DeliveryCall) ([]DeliveryBucket, error) {
	start, width, n, err := w.Buckets(now)
	if err != nil {
		return nil, err
	}
	out := EmptyBuckets(start, width, n)
	lat := make([][]time.Duration, n)
	for _, c := range calls {
		if c.At.Before(start) {
			continue
		}
		i := int(c.At.Sub(start) / width)
		if i >= n {
			continue
		}
		if c.Failed {
			out[i].Failed++
		} else {
			out[i].Delivered++
		}
		lat[i] = append(lat[i], c.Latency)
	}
	for i := range out {
		slices.Sort(lat[i])
		out[i].P50, out[i].P99 = NearestRank(lat[i], 50), NearestRank(lat[i], 99)
	}
	return out, nil
}

// EmptyBuckets returns n buckets of width from start, with nothing counted.
func EmptyBuckets(start time.Time, width time.Duration, n int) []DeliveryBucket {
	out := make([]DeliveryBucket, n)
	for i := range out {
		out[i].Start = start.Add(time.Duration(i) * width)
	}
	return out
}

// NearestRank is the p-th percentile of sorted values by the nearest-rank
// method; 0 when there are none.
func NearestRank(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[RankIndex(len(sorted), p)]
}

// RankIndex is where the p-th percentile of n sorted values is, by the
// nearest-rank method (n > 0).
func RankIndex(n, p int) int {
	return max((p*n+99)/100, 1) - 1
}
