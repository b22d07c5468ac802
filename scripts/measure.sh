#!/usr/bin/env bash
# Runs every performance measure of docs/performance.md in one sitting, so
# the figures compare. Needs the local PostgreSQL for the last two (a
# database intake_bench is created and dropped).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
go build -o "$bin/intake" ./cmd/intake
go build -o "$bin/intake-bench" ./cmd/intake-bench
bench() { "$bin/intake-bench" --spawn --intake-bin "$bin/intake" "$@" 2>/dev/null | grep -v '^$'; }
pg=${INTAKE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
pgdb() { psql "$pg" -XAtqc "$1" >/dev/null; }

echo "== ingress alone (Go benchmark)"
go test -run='^$' -bench=BenchmarkIngest -benchtime=5s ./ingress/ | grep Benchmark | tee "$bin/ingest.txt"
# The ratios of this one run: req/s and CPU per request against bare HTTP.
awk '{ k = $1; sub(/-[0-9]+$/, "", k); for (i = 2; i < NF; i++) { if ($(i+1) == "req/s") rps[k] = $i; if ($(i+1) == "cpu-µs/req") cpu[k] = $i } }
	END { b = "BenchmarkIngest/bare"; for (k in rps) if (k != b) printf "%s: %.2f of bare req/s, %.2fx its CPU per request\n", k, rps[k] / rps[b], cpu[k] / cpu[b] }' "$bin/ingest.txt"
echo "== whole server, closed loop, with the bare baseline"
bench --baseline --clients 64 --body-bytes 2048 --duration 15s
for rate in 200 1000 1500; do
	echo "== end to end at $rate/s"
	bench --e2e --rate "$rate" --duration 15s
done
echo "== claims, 10 000 vs 1 000 000 stored"
go test -run='^$' -bench=BenchmarkClaimMessages -benchtime=300x ./store/sqlite/ | grep Benchmark
url="${pg%%/postgres\?*}/intake_bench?sslmode=disable"
for run in "--clients 64 --body-bytes 2048 --duration 15s" "--e2e --rate 500 --duration 15s"; do
	pgdb "DROP DATABASE IF EXISTS intake_bench WITH (FORCE)"
	pgdb "CREATE DATABASE intake_bench"
	echo "== PostgreSQL: $run"
	# shellcheck disable=SC2086
	INTAKE_DB="$url" bench $run
done
pgdb "DROP DATABASE IF EXISTS intake_bench WITH (FORCE)"
rm -rf "$bin"
