#!/usr/bin/env bash
# Builds the container image with podman from this checkout's own binary and
# checks what the Dockerfile promises. No container registry is reachable
# here and the sandbox cannot start a container, so the Dockerfile's Go
# build stage is replaced by the same layout built on the host
# (scripts/image-rootfs.sh, --build-context rootfs=…), and the image is run
# by extracting its filesystem and chroot-ing into it as its user. Needs root
# and podman.
set -euo pipefail
cd "$(dirname "$0")/.."

image=localhost/intake:image-check
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
work=$(mktemp -d)
server=""
cleanup() {
	if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -KILL "$server"; fi
	podman rmi -f "$image" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "image-check: $*" >&2; exit 1; }
step() { echo "image-check: $*"; }
elapsed() { echo "$(( $(date +%s%N) / 1000000 - $1 )) ms"; }
now() { echo $(( $(date +%s%N) / 1000000 )); }

t=$(now)
scripts/image-rootfs.sh "$work/rootfs" "$version" "$commit"
step "static binary and filesystem laid out in $(elapsed "$t")"

t=$(now)
# docker format: OCI image configs have no HEALTHCHECK.
podman build --quiet --format docker --layers=false --build-context rootfs="$work/rootfs" \
	--build-arg VERSION="$version" --build-arg COMMIT="$commit" -t "$image" . >/dev/null
step "podman build in $(elapsed "$t")"

inspect() { podman image inspect --format "$1" "$image"; }
expect() { # what, got, want
	[ "$2" = "$3" ] || fail "$1: got $2, want $3"
}
expect user "$(inspect '{{.Config.User}}')" "65532:65532"
expect entrypoint "$(inspect '{{json .Config.Entrypoint}}')" '["/usr/local/bin/intake"]'
expect cmd "$(inspect '{{json .Config.Cmd}}')" '["serve"]'
expect volumes "$(inspect '{{json .Config.Volumes}}')" '{"/data":{}}'
expect ports "$(inspect '{{json .Config.ExposedPorts}}')" '{"8080/tcp":{}}'
expect env "$(inspect '{{json .Config.Env}}')" '["PATH=/usr/local/bin","INTAKE_DATA=/data"]'
expect healthcheck "$(inspect '{{json .HealthCheck.Test}}')" '["CMD","/usr/local/bin/intake","healthcheck"]'
expect label.title "$(inspect '{{index .Config.Labels "org.opencontainers.image.title"}}')" intake
expect label.version "$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}')" "$version"
expect label.revision "$(inspect '{{index .Config.Labels "org.opencontainers.image.revision"}}')" "$commit"
expect label.source "$(inspect '{{index .Config.Labels "org.opencontainers.image.source"}}')" https://github.com/intakehq/intake
step "config: user 65532:65532, entrypoint, cmd, /data volume, port, env, healthcheck, labels as promised"

# The filesystem of a created, never started container.
fs="$work/fs"
mkdir "$fs"
container=$(podman create --no-healthcheck "$image")
podman export "$container" | tar -x -C "$fs"
podman rm "$container" >/dev/null
files=$(cd "$fs" && find . -mindepth 1 -not -type d | sort | tr '\n' ' ')
expect files "$files" "./etc/group ./etc/passwd ./etc/ssl/certs/ca-certificates.crt ./usr/local/bin/intake "
expect /data "$(stat -c '%u:%g %a' "$fs/data")" "65532:65532 700"
expect /tmp "$(stat -c '%a' "$fs/tmp")" 1777
go version -m "$fs/usr/local/bin/intake" | grep -q 'CGO_ENABLED=0' || fail "the binary was not built with CGO_ENABLED=0"
step "filesystem: the binary (CGO_ENABLED=0), CA certificates, passwd, /data owned by 65532, /tmp 1777, nothing else"

# Run the image's binary inside its filesystem as its user, with its env.
chroot=$(command -v chroot)
in_image() { env -i PATH=/usr/local/bin INTAKE_DATA=/data "$chroot" --userspec=65532:65532 "$fs" "$@"; }
expect "intake version" "$(in_image /usr/local/bin/intake version)" "intake $version (commit $commit, $(go env GOVERSION))"
step "inside the image filesystem as 65532: intake version printed $version, $commit"

t=$(now)
# Not through in_image: $! must be the server itself, for SIGTERM.
env -i PATH=/usr/local/bin INTAKE_DATA=/data "$chroot" --userspec=65532:65532 "$fs" \
	/usr/local/bin/intake serve --addr 127.0.0.1:0 --log-format json 2>"$work/serve.log" &
server=$!
addr=""
for _ in $(seq 300); do # up to 30 s
	addr=$(sed -n 's/.*"msg":"intake serving".*"addr":"\([^"]*\)".*/\1/p' "$work/serve.log")
	[ -n "$addr" ] && break
	kill -0 "$server" 2>/dev/null || fail "intake serve exited: $(cat "$work/serve.log")"
	sleep 0.1
done
[ -n "$addr" ] || fail "intake serve did not start in 30 s: $(cat "$work/serve.log")"
# The image's own HEALTHCHECK command, as an engine would run it.
read -r -a probe <<<"$(inspect '{{range slice .HealthCheck.Test 1}}{{.}} {{end}}')"
healthy() {
	env -i PATH=/usr/local/bin INTAKE_DATA=/data INTAKE_ADDR="$addr" "$chroot" --userspec=65532:65532 "$fs" "${probe[@]}"
}
healthy || fail "the image's healthcheck (${probe[*]}) failed on a serving process"
expect "data written by 65532" "$(stat -c '%u' "$fs/data/intake.db" "$fs/data/master.key" | sort -u)" 65532
kill -TERM "$server"
wait "$server" || fail "intake serve did not exit 0 after SIGTERM: $(cat "$work/serve.log")"
server=""
if healthy 2>/dev/null; then
	fail "healthcheck passed with no server"
fi
step "inside the image filesystem as 65532: serve started on $addr, the image's healthcheck 0, wrote /data, SIGTERM exit 0, healthcheck 1 after ($(elapsed "$t"))"
echo "image-check: ok ($version, $commit)"
