package pressure_test

import (
	"testing"

	"github.com/intakehq/intake/internal/pressure"
)

func TestPressureTurnsHighAboveItsThresholdAndCalmWhenItFalls(t *testing.T) {
	p := pressure.New(2)
	calmNow := func() bool {
		select {
		case <-p.Calm():
			return true
		default:
			return false
		}
	}
	p.Enter()
	p.Enter()
	if p.High() || !calmNow() || p.Limit(64) != 64 {
		t.Fatalf("two waiting at threshold 2: high %v, limit %d; want calm and every slot", p.High(), p.Limit(64))
	}
	p.Enter()
	calm := p.Calm()
	if !p.High() || calmNow() || p.Limit(64) != 8 || p.Limit(4) != 1 || p.Waiting() != 3 {
		t.Fatalf("three waiting: high %v, limits %d and %d, waiting %d; want high, 8 of 64 and 1 of 4, 3",
			p.High(), p.Limit(64), p.Limit(4), p.Waiting())
	}
	p.Leave()
	select {
	case <-calm:
	default:
		t.Fatal("the channel taken while high did not close when the queue fell to the threshold")
	}
	if p.High() || p.Limit(64) != 64 {
		t.Fatal("still high after the queue fell to the threshold")
	}
	var none *pressure.Gauge
	none.Enter()
	if none.High() || none.Limit(5) != 5 {
		t.Fatal("a nil pressure held processing back")
	}
	<-none.Calm()
}
