#!/bin/sh
# Lays out the container image's filesystem under DEST: intake built static
# (CGO_ENABLED=0) and what it needs at run time (CA certificates for HTTPS
# consumers, a user 65532, a /data it owns, a /tmp). The Dockerfile's build
# stage and scripts/image-check.sh both call it, so the image CI checks is
# laid out exactly as the one users build. Run it as root (it sets owners)
# from the repository root:
#   scripts/image-rootfs.sh DEST [VERSION [COMMIT]]
set -eu
dest=${1:?usage: image-rootfs.sh DEST [VERSION [COMMIT]]}
version=${2:-dev}
commit=${3:-unknown}

mkdir -p "$dest/usr/local/bin" "$dest/etc/ssl/certs" "$dest/data" "$dest/tmp"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
	-o "$dest/usr/local/bin/intake" ./cmd/intake
cp /etc/ssl/certs/ca-certificates.crt "$dest/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/data:/sbin/nologin\n' >"$dest/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$dest/etc/group"
chown 65532:65532 "$dest/data"
chmod 0700 "$dest/data"
chmod 1777 "$dest/tmp"
