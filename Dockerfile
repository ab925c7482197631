# syntax=docker/dockerfile:1
# One image for both binaries: the controller (the default entrypoint) and the admission webhook
# (config/webhook runs /webhook). Static, non-root, nothing but the binaries, CA roots and zones.
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t <registry>/karpenter:v0.1.0 --push .
#
# For users who build with Docker. `make image` and `make release` build the equivalent image
# without Docker or any pull (hack/image.sh: buildah, FROM scratch, the same binaries built with
# the same flags, Debian's ca-certificates and tzdata, user 65532), and test/image runs that one;
# keep the two in step.

# The builder runs on the build machine's platform and cross-compiles, so multi-arch builds
# need no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS builder
ARG TARGETOS TARGETARCH
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/controller ./cmd/webhook

# distroless/static: CA certificates (for AWS and Prometheus over TLS), tzdata (schedules name
# time zones), /etc/passwd with the nonroot user; no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=builder /out/controller /out/webhook /
USER 65532:65532
ENTRYPOINT ["/controller"]
