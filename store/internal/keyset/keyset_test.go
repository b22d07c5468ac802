package keyset

import (
	"testing"

	"github.com/intakehq/intake"
)

func TestPageTrimsTheExtraRowAndPointsPastTheLastKept(t *testing.T) {
	items := []intake.Event{{ID: "c"}, {ID: "b"}, {ID: "a"}}
	p := Page(items, 2)
	if len(p.Items) != 2 || p.NextCursor != "b" {
		t.Fatalf("page = %+v", p)
	}
	if p := Page(items, 3); len(p.Items) != 3 || p.NextCursor != "" {
		t.Fatalf("last page = %+v", p)
	}
}
