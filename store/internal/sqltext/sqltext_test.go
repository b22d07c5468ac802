package sqltext

import "testing"

func TestListQuotesEachValue(t *testing.T) {
	type state string
	if got := List([]state{"queued", "failed"}); got != "'queued', 'failed'" {
		t.Fatalf("List = %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a value with a quote was written into SQL")
		}
	}()
	List([]string{"it's"})
}
