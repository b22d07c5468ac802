#!/usr/bin/env bash
# Runs every performance measure of docs/performance.md in one sitting, so
# the figures compare; name parts to run only those:
#   scripts/measure.sh [ingest] [server] [e2e] [claims] [postgres] [pipeline] [controls] [trips] [noisy] [brokers] [catalog] [replicate]
# postgres, pipeline, controls, trips and noisy need the local PostgreSQL ($INTAKE_TEST_POSTGRES or
# the default below): intake-bench creates a fresh database and drops it. replicate needs
# SeaweedFS ($INTAKE_TEST_S3, as .ci/run starts it).
set -euo pipefail
cd "$(dirname "$0")/.."
parts="ingest server e2e claims postgres pipeline controls trips noisy brokers catalog replicate"
for part in "$@"; do
	case " $parts " in
	*" $part "*) ;;
	*) echo "measure.sh: unknown part $part; want some of: $parts" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] && parts="$*"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/intake" ./cmd/intake
go build -o "$bin/intake-bench" ./cmd/intake-bench
bench() { "$bin/intake-bench" --spawn --intake-bin "$bin/intake" "$@" 2>/dev/null | grep -v '^$'; }
pg=${INTAKE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

ingest() {
	echo "== ingress alone (Go benchmark), three rounds"
	go test -c -o "$bin/ingress.test" ./ingress/
	for round in 1 2 3; do
		(cd "$bin" && ./ingress.test -test.run='^$' -test.bench=BenchmarkIngest -test.benchtime=5s) | grep Benchmark
	done | tee "$bin/ingest.txt"
	# Each round runs bare, handler and sqlite back to back; a ratio is taken
	# within its round, and the median of the three rounds is printed.
	awk '{ k = $1; sub(/-[0-9]+$/, "", k); sub(/^BenchmarkIngest\//, "", k)
		if (k == "bare") r++
		for (i = 2; i < NF; i++) { if ($(i+1) == "req/s") rps[k, r] = $i; if ($(i+1) == "cpu-µs/req") cpu[k, r] = $i } }
		function med(a, b, c) { return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b)) }
		END { n = split("handler sqlite", ks, " ")
			for (j = 1; j <= n; j++) { k = ks[j]
				printf "%s: median of 3 rounds: %.2f of bare req/s, %.2fx its CPU per request\n", k,
					med(rps[k,1] / rps["bare",1], rps[k,2] / rps["bare",2], rps[k,3] / rps["bare",3]),
					med(cpu[k,1] / cpu["bare",1], cpu[k,2] / cpu["bare",2], cpu[k,3] / cpu["bare",3]) } }' "$bin/ingest.txt"
}

server() {
	echo "== whole server, closed loop, with the bare baseline"
	bench --baseline --clients 64 --body-bytes 2048 --duration 15s
}

e2e() {
	for rate in 200 1000 1500; do
		echo "== end to end at $rate/s"
		bench --e2e --rate "$rate" --duration 15s
	done
}

claims() {
	echo "== claims, 10 000 vs 1 000 000 stored"
	go test -run='^$' -bench=BenchmarkClaimMessages -benchtime=300x ./store/sqlite/ | grep Benchmark
}

postgres() {
	for run in "--clients 64 --body-bytes 2048 --duration 15s" "--e2e --rate 500 --duration 15s"; do
		echo "== PostgreSQL: $run"
		# shellcheck disable=SC2086
		bench --db "$pg" $run
	done
}

pipeline() {
	echo "== whole pipeline, closed loop to the last delivery: bare, SQLite, PostgreSQL"
	bench --pipeline --db "$pg" --clients 64 --body-bytes 2048 --duration 15s
	echo "== PostgreSQL end to end at 1000/s"
	bench --e2e --db "$pg" --rate 1000 --duration 15s
}

controls() {
	echo "== a paused consumer beside a healthy one, SQLite, 500/s: three pairs, alternating"
	for pair in 1 2 3; do
		for paused in "" --paused-consumer; do
			# shellcheck disable=SC2086
			"$bin/intake-bench" --spawn --intake-bin "$bin/intake" --e2e --rate 500 --duration 20s $paused --json 2>/dev/null >"$bin/pair$pair$paused.json"
		done
		jq -r --slurpfile p "$bin/pair$pair--paused-consumer.json" \
			'.intake.e2e as $a | $p[0].intake.e2e as $b |
			def ms: . * 10 | round / 10;
			"pair \($pair): healthy p99 \($a.latency_ms.p99 | ms) ms alone, \($b.latency_ms.p99 | ms) ms beside the paused one (\($b.paused_consumer.held) held, \($b.paused_consumer.delivered) delivered to it): ratio \($b.latency_ms.p99 / $a.latency_ms.p99 * 100 | round / 100)"' \
			--arg pair "$pair" "$bin/pair$pair.json"
	done
	echo "== rate_per_sec 50 under 100/s for 60 s: one process on SQLite, on PostgreSQL, three on one PostgreSQL database"
	for run in "" "--db $pg" "--db $pg --processes 3"; do
		# shellcheck disable=SC2086
		"$bin/intake-bench" --spawn --intake-bin "$bin/intake" --e2e --consumer-rate 50 --rate 100 --duration 60s $run 2>/dev/null |
			grep -E 'peak RSS|consumer rate_per_sec|missing' | sed "s|^|${run:-sqlite}: |; s|$pg|\$pg|"
	done
}

trips() {
	echo "== statements and round trips per webhook through the whole pipeline"
	go test -run='^$' -bench=BenchmarkPipeline -benchtime=200x ./store/sqlite/ | grep Benchmark
	INTAKE_TEST_POSTGRES=$pg go test -run='^$' -bench=BenchmarkPipeline -benchtime=200x ./store/postgres/ | grep Benchmark
}

noisy() {
	echo "== noisy neighbours: org A alone, then while org B runs each attack (SQLite, then PostgreSQL)"
	"$bin/intake-bench" --noisy --intake-bin "$bin/intake" 2>/dev/null
	"$bin/intake-bench" --noisy --intake-bin "$bin/intake" --db "$pg" 2>/dev/null
}

brokers() {
	echo "== the same closed-loop load delivered over HTTP, to NATS JetStream, to Kafka (kfake, in the bench's process), SQLite"
	nats=${INTAKE_TEST_NATS:-127.0.0.1:4222}
	for to in http "nats://$nats/intakebench.{type}?stream=INTAKE_BENCH" "kafka://kfake/intakebench.{type}"; do
		consumer=()
		[ "$to" = http ] || consumer=(--consumer "$to")
		"$bin/intake-bench" --spawn --intake-bin "$bin/intake" --e2e --clients 64 --body-bytes 2048 --duration 20s \
			"${consumer[@]}" --json 2>/dev/null >"$bin/to-${to%%:*}.json"
	done
	for to in http nats kafka; do
		jq -r --slurpfile h "$bin/to-http.json" --arg to "$to" '.intake as $r | $h[0].intake.to_last_delivery_per_sec as $hr |
			"\($to) (\($r.e2e.consumer)): acked \($r.acked_per_sec | round)/s; \($r.to_last_delivery_per_sec | round)/s first request → last arrival over \($r.to_last_delivery_seconds * 10 | round / 10) s; \($r.e2e.delivered) delivered, \($r.e2e.missing // 0) missing, \($r.e2e.duplicates // 0) duplicate; e2e p50 \($r.e2e.latency_ms.p50 | round) ms p99 \($r.e2e.latency_ms.p99 | round) ms; \($r.to_last_delivery_per_sec / $hr * 100 | round / 100) of http"' "$bin/to-$to.json"
	done
}

catalog() {
	echo "== the event-type catalog off and on: three pairs, alternating which goes first (closed loop, to the last delivery)"
	bench --catalog-pairs 3 --e2e --clients 64 --body-bytes 2048 --duration 15s
}

replicate() {
	echo "== the embedded store replicated: none, --replicate and --replicate-sync in three rounds, the lag at 1 000/s, a 1 GiB restore"
	AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-intake-test} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-intake-test} AWS_CA_BUNDLE= \
		bench --replicate "s3://intake-bench/repl?endpoint=${INTAKE_TEST_S3:-http://127.0.0.1:8333}&region=us-east-1" \
		--replicate-rounds 3 --clients 64 --body-bytes 2048 --duration 10s --lag-rate 1000 --restore-bytes 1073741824
}

for part in $parts; do
	"$part"
done
