package main

import (
	"os"
	"strings"
	"testing"
)

// --max-body-bytes goes up to 100 MiB, and on PostgreSQL to 10 MiB
// without a blob store (the embedded store spools larger bodies to files);
// --body-memory must let one org hold one body: read whole at ingress
// when the database keeps it, or held worker.BodyCharge times over while
// it is processed when it is spooled. Either refused stops the server
// before it starts, naming the flag.
func TestBodyFlagsRefuseACapAbove10MiBInPostgreSQLAndABudgetTooSmallForOneBody(t *testing.T) {
	for _, env := range []string{"INTAKE_MAX_BODY_BYTES", "INTAKE_BODY_MEMORY", "INTAKE_BLOB_STORE", "INTAKE_BLOB_THRESHOLD", "INTAKE_DB"} {
		t.Setenv(env, "") // restored when the test ends
		os.Unsetenv(env)
	}
	b, err := serveFlags(t).bodyMemory()
	if err != nil || b.Total != 256<<20 || b.What != "body memory" {
		t.Fatalf("the defaults: %+v %v, want a budget of 256 MiB", b, err)
	}
	const pg = "postgres://db"
	for _, c := range []struct {
		args []string
		want string // "": started
	}{
		// The embedded store spools: a 64 MiB body is held 5 times over
		// while it is processed, 335 544 320 bytes, three quarters of
		// 447 392 426.
		{[]string{"--max-body-bytes", "67108864"}, "--body-memory must be at least 447392426 bytes"},
		{[]string{"--max-body-bytes", "67108864", "--body-memory", "447392426"}, ""},
		{[]string{"--max-body-bytes", "104857600", "--body-memory", "699050666"}, ""},
		{[]string{"--max-body-bytes", "104857600", "--body-memory", "699050665"}, "--body-memory must be at least 699050666 bytes"},
		{[]string{"--max-body-bytes", "104857601"}, "--max-body-bytes must be between 1 and 104857600"},
		{[]string{"--max-body-bytes", "0"}, "--max-body-bytes must be between 1"},
		// The default 10 MiB: 52 428 800 bytes while processed.
		{[]string{"--body-memory", "69905065"}, "--body-memory must be at least 69905066 bytes"},
		{[]string{"--body-memory", "69905066"}, ""},
		// PostgreSQL keeps bodies in the database without a blob store:
		// up to 10 MiB, read whole at ingress.
		{[]string{"--db", pg, "--max-body-bytes", "10485760"}, ""},
		{[]string{"--db", pg, "--max-body-bytes", "10485761"}, "--max-body-bytes above 10485760 (10 MiB) needs --blob-store on PostgreSQL"},
		{[]string{"--db", pg, "--max-body-bytes", "67108864"}, "needs --blob-store on PostgreSQL"},
		{[]string{"--db", pg, "--body-memory", "13981013"}, "--body-memory must be at least 13981014 bytes"},
		{[]string{"--db", pg, "--body-memory", "13981014"}, ""},
		// With a blob store, a body is read whole at ingress up to the
		// threshold only, and is held while processed.
		{[]string{"--db", pg, "--blob-store", "s3://b", "--max-body-bytes", "104857600", "--body-memory", "699050666"}, ""},
		{[]string{"--db", pg, "--blob-store", "s3://b", "--max-body-bytes", "104857600", "--body-memory", "1048576"}, "--body-memory must be at least 699050666 bytes"},
	} {
		_, err := serveFlags(t, c.args...).bodyMemory()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
