package main

import (
	"os"
	"strings"
	"testing"
)

// --max-body-bytes goes up to 64 MiB, and to 100 MiB only with a blob
// store; --body-memory must let one org hold one body read whole. Either
// refused stops the server before it starts, naming the flag.
func TestBodyFlagsRefuseACapAbove64MiBWithoutABlobStoreAndABudgetTooSmallForOneBody(t *testing.T) {
	for _, env := range []string{"INTAKE_MAX_BODY_BYTES", "INTAKE_BODY_MEMORY", "INTAKE_BLOB_STORE", "INTAKE_BLOB_THRESHOLD"} {
		t.Setenv(env, "") // restored when the test ends
		os.Unsetenv(env)
	}
	b, err := serveFlags(t).bodyMemory()
	if err != nil || b.Total != 256<<20 || b.What != "body memory" {
		t.Fatalf("the defaults: %+v %v, want a budget of 256 MiB", b, err)
	}
	for _, c := range []struct {
		args []string
		want string // "": started
	}{
		{[]string{"--max-body-bytes", "67108864"}, ""},
		{[]string{"--max-body-bytes", "67108865"}, "--max-body-bytes above 67108864 (64 MiB) needs --blob-store"},
		{[]string{"--max-body-bytes", "104857600", "--blob-store", "s3://b"}, ""},
		{[]string{"--max-body-bytes", "104857601", "--blob-store", "s3://b"}, "--max-body-bytes must be between 1 and 104857600"},
		{[]string{"--max-body-bytes", "0"}, "--max-body-bytes must be between 1"},
		// 10 MiB and a byte need 13 981 014 bytes, of which an org alone holds three quarters.
		{[]string{"--body-memory", "13981013"}, "--body-memory must be at least 13981014 bytes"},
		{[]string{"--body-memory", "13981014"}, ""},
		// With a blob store, a body is read whole up to the threshold only.
		{[]string{"--body-memory", "1048576", "--blob-store", "s3://b", "--max-body-bytes", "104857600"}, ""},
	} {
		_, err := serveFlags(t, c.args...).bodyMemory()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
