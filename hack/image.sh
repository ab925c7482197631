#!/usr/bin/env bash
# Builds Karpenter's image, controller and webhook, for linux/amd64 and linux/arm64 with buildah,
# without a daemon and without pulling anything: FROM scratch, the binaries cross-compiled here,
# and what they read at run time taken from this machine's Debian packages:
#   /etc/ssl/certs/ca-certificates.crt   ca-certificates  (AWS, Prometheus over TLS)
#   /usr/share/zoneinfo                  tzdata           (schedules name time zones)
#   /etc/passwd, /etc/group              written here     (nonroot, 65532)
# The result is one OCI archive holding the multi-arch index: bin/karpenter-image.oci.tar by
# default, its index digest in <archive>.digest. The Dockerfile builds the same image for Docker
# users (distroless/static:nonroot holds the same files). test/image unpacks and runs it.
#
# usage: hack/image.sh [version] [archive]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${1:-dev}"
archive="${2:-${ROOT}/bin/karpenter-image.oci.tar}"
ARCHES=(amd64 arm64)
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
ZONEINFO=/usr/share/zoneinfo

log() { echo "image: $*" >&2; }
fail() { echo "image: ERROR: $*" >&2; exit 1; }

for tool in buildah skopeo; do
	command -v "${tool}" >/dev/null || fail "${tool} is not on PATH: apt-get install buildah skopeo (or make test-assets)"
done
[[ -s "${CA_BUNDLE}" ]] || fail "${CA_BUNDLE} is missing: install Debian's ca-certificates"
[[ -f "${ZONEINFO}/America/Los_Angeles" ]] || fail "${ZONEINFO} is incomplete: install Debian's tzdata"

begin=${SECONDS}
stage="$(mktemp -d)"
# Names unique to this run: parallel builds on one machine share buildah's storage.
run="karpenter-image-$$"
containers=()
images=()
cleanup() {
	local name
	for name in "${containers[@]}"; do buildah rm "${name}" >/dev/null 2>&1 || true; done
	buildah manifest rm "${run}" >/dev/null 2>&1 || true
	for name in "${images[@]}"; do buildah rmi "${name}" >/dev/null 2>&1 || true; done
	rm -rf "${stage}"
}
trap cleanup EXIT

# The same files for every architecture.
mkdir -p "${stage}/rootfs/etc" "${stage}/rootfs/home/nonroot" "${stage}/rootfs/tmp"
cat >"${stage}/rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat >"${stage}/rootfs/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
nonroot:x:65532:
GROUP

for arch in "${ARCHES[@]}"; do
	log "building controller and webhook for linux/${arch}"
	mkdir -p "${stage}/${arch}"
	(cd "${ROOT}" && CGO_ENABLED=0 GOOS=linux GOARCH="${arch}" GOFLAGS=-buildvcs=false \
		go build -trimpath -ldflags="-s -w -X karpenter.sh/karpenter/pkg/operator.Version=${version}" -o "${stage}/${arch}/" ./cmd/controller ./cmd/webhook) ||
		fail "building the binaries for ${arch}"

	container="$(buildah from --name "${run}-${arch}" --arch "${arch}" --os linux scratch)"
	containers+=("${container}")
	buildah copy --quiet "${container}" "${stage}/rootfs/etc" /etc >/dev/null
	buildah copy --quiet --chown 65532:65532 "${container}" "${stage}/rootfs/home/nonroot" /home/nonroot >/dev/null
	buildah copy --quiet "${container}" "${stage}/rootfs/tmp" /tmp >/dev/null
	buildah copy --quiet "${container}" "${CA_BUNDLE}" "${CA_BUNDLE}" >/dev/null
	buildah copy --quiet "${container}" "${ZONEINFO}" "${ZONEINFO}" >/dev/null
	buildah copy --quiet "${container}" "${stage}/${arch}/controller" "${stage}/${arch}/webhook" / >/dev/null
	buildah config \
		--arch "${arch}" --os linux \
		--user 65532:65532 \
		--workingdir / \
		--entrypoint '["/controller"]' --cmd '' \
		--label org.opencontainers.image.title=karpenter \
		--label org.opencontainers.image.version="${version}" \
		--label org.opencontainers.image.source=https://github.com/aws/karpenter \
		"${container}"
	# A fixed creation time keeps the digest a function of the contents.
	image="localhost/${run}:${arch}"
	buildah commit --quiet --rm --timestamp 0 "${container}" "${image}" >/dev/null
	containers=()
	images+=("${image}")
done

buildah manifest create "${run}" >/dev/null
for image in "${images[@]}"; do
	buildah manifest add "${run}" "containers-storage:${image}" >/dev/null
done
mkdir -p "$(dirname "${archive}")"
rm -f "${archive}"
buildah manifest push --quiet --all "${run}" "oci-archive:${archive}:${version}" ||
	fail "writing ${archive}"
digest="sha256:$(skopeo inspect --raw "oci-archive:${archive}" | sha256sum | cut -d' ' -f1)"
echo "${digest}" >"${archive}.digest"
log "wrote ${archive} (${ARCHES[*]}), index ${digest}, in $((SECONDS - begin))s"
echo "${digest}"
