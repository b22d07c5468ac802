package main

import (
	"context"
	"fmt"
	"io"
	"slices"
)

// CatalogReport compares intake with its event-type catalog off and on:
// pairs of runs on servers spawned alike but for INTAKE_CATALOG, the order
// within a pair alternating, so a drift of the machine falls on both sides.
type CatalogReport struct {
	Pairs []CatalogPair `json:"pairs"`
	// Median ratios, on over off, of the acked webhooks per second, of
	// those delivered per second to the last delivery (with --e2e), and of
	// the webhooks acked per CPU-second of the server: the steadiest of
	// the three on a machine others share.
	AckedRatio    float64 `json:"acked_ratio"`
	DeliveryRatio float64 `json:"delivery_ratio,omitempty"`
	PerCPURatio   float64 `json:"per_cpu_ratio"`
}

// CatalogPair is one run with the catalog off and one with it on.
type CatalogPair struct {
	Off           *Run    `json:"off"`
	On            *Run    `json:"on"`
	AckedRatio    float64 `json:"acked_ratio"`
	DeliveryRatio float64 `json:"delivery_ratio,omitempty"`
	PerCPURatio   float64 `json:"per_cpu_ratio"`
}

// perCPU is a run's acked webhooks per CPU-second of its servers.
func perCPU(r *Run) float64 {
	if r.ServerCPUSeconds <= 0 {
		return 0
	}
	return float64(r.Acked) / r.ServerCPUSeconds
}

// catalogBench runs o.catalogPairs pairs of the closed or open load of o,
// each on a fresh spawned server.
func catalogBench(ctx context.Context, o options, progress io.Writer) (*CatalogReport, error) {
	l := load{Clients: o.clients, Rate: o.rate, Duration: o.duration, BodyBytes: o.bodyBytes}
	off := stage{name: "catalog off", db: o.db, env: []string{"INTAKE_CATALOG=false"}}
	on := stage{name: "catalog on", db: o.db, env: []string{"INTAKE_CATALOG=true"}}
	r := &CatalogReport{}
	for i := range o.catalogPairs {
		order := []stage{off, on}
		if i%2 == 1 {
			order = []stage{on, off}
		}
		var p CatalogPair
		for _, st := range order {
			got, err := measure(ctx, o, l, st, progress)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", st.name, err)
			}
			if st.name == on.name {
				p.On = got
			} else {
				p.Off = got
			}
		}
		if p.Off.AckedPerSec > 0 {
			p.AckedRatio = p.On.AckedPerSec / p.Off.AckedPerSec
		}
		if p.Off.ToLastDeliveryPerSec > 0 {
			p.DeliveryRatio = p.On.ToLastDeliveryPerSec / p.Off.ToLastDeliveryPerSec
		}
		if perCPU(p.Off) > 0 {
			p.PerCPURatio = perCPU(p.On) / perCPU(p.Off)
		}
		fmt.Fprintf(progress, "pair %d: acked %.0f/s off, %.0f/s on (%.3f)\n", i+1, p.Off.AckedPerSec, p.On.AckedPerSec, p.AckedRatio)
		r.Pairs = append(r.Pairs, p)
	}
	var acked, delivered, cpu []float64
	for _, p := range r.Pairs {
		acked, cpu = append(acked, p.AckedRatio), append(cpu, p.PerCPURatio)
		if p.DeliveryRatio > 0 {
			delivered = append(delivered, p.DeliveryRatio)
		}
	}
	r.AckedRatio, r.DeliveryRatio, r.PerCPURatio = median(acked), median(delivered), median(cpu)
	return r, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Sorted(slices.Values(xs))
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func (r *CatalogReport) writeText(w io.Writer) {
	fmt.Fprintln(w, "event-type catalog: off against on, pairs in alternating order")
	for i, p := range r.Pairs {
		fmt.Fprintf(w, "pair %d: acked/s off %.0f on %.0f ratio %.3f", i+1, p.Off.AckedPerSec, p.On.AckedPerSec, p.AckedRatio)
		if p.DeliveryRatio > 0 {
			fmt.Fprintf(w, "; delivered/s off %.0f on %.0f ratio %.3f", p.Off.ToLastDeliveryPerSec, p.On.ToLastDeliveryPerSec, p.DeliveryRatio)
		}
		fmt.Fprintf(w, "; acked per server CPU-second off %.0f on %.0f ratio %.3f", perCPU(p.Off), perCPU(p.On), p.PerCPURatio)
		fmt.Fprintf(w, "; ack p99 off %.1f ms on %.1f ms\n", p.Off.Ack.P99, p.On.Ack.P99)
	}
	fmt.Fprintf(w, "median ratio on/off: acked per CPU-second %.3f, acked %.3f", r.PerCPURatio, r.AckedRatio)
	if r.DeliveryRatio > 0 {
		fmt.Fprintf(w, ", delivered %.3f", r.DeliveryRatio)
	}
	fmt.Fprintln(w)
}
