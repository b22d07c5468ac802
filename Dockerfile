# intake's container image: one static binary on an empty base, run as the
# unprivileged user 65532, its data in the /data volume.
#
#   docker build -t intake \
#     --build-arg VERSION=$(git describe --tags --always) --build-arg COMMIT=$(git rev-parse HEAD) .
#
# The build stages compile intake from source. To package a binary built
# elsewhere, lay its filesystem out with scripts/image-rootfs.sh and hand the
# directory over in place of the "rootfs" stage, as CI does
# (scripts/image-check.sh):
#   podman build --format docker --build-context rootfs=DIR .
ARG GO_VERSION=1.26.8

FROM docker.io/library/golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
# The inbox module, which go.mod replaces with this directory.
COPY inbox/go.mod inbox/
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN scripts/image-rootfs.sh /rootfs "$VERSION" "$COMMIT"

FROM scratch AS rootfs
COPY --from=build /rootfs/ /

FROM scratch
ARG VERSION=dev
ARG COMMIT=unknown
# Copies between stages keep the owners image-rootfs.sh set (/data: 65532).
COPY --from=rootfs / /
USER 65532:65532
ENV PATH=/usr/local/bin INTAKE_DATA=/data
WORKDIR /data
VOLUME /data
EXPOSE 8080
# The probe asks the loopback of INTAKE_ADDR (default :8080): to move the
# port, set INTAKE_ADDR rather than passing --addr, so the probe follows.
HEALTHCHECK --interval=10s --timeout=5s --start-period=15s --retries=3 CMD ["/usr/local/bin/intake", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/intake"]
CMD ["serve"]
LABEL org.opencontainers.image.title="intake" \
      org.opencontainers.image.description="A self-hosted inbound webhook gateway: durable receipt, verification, typed events, delivery with retries and replay." \
      org.opencontainers.image.source="https://github.com/intakehq/intake" \
      org.opencontainers.image.documentation="https://github.com/intakehq/intake#running-in-containers" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
