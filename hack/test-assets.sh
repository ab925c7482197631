#!/usr/bin/env bash
# Installs the real components the tests run, and nothing else:
#   bin/kube-apiserver, bin/kube-scheduler, bin/kube-controller-manager  built from hack/kube
#   bin/kwok                                                              go install
#   bin/helm                                                              built from hack/helm
#   etcd, prometheus                                                      Debian packages
#   buildah, skopeo, umoci; CA certificates, tzdata (the image's files)   Debian packages
# Idempotent: every step is skipped when its result is already present at the right version.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"
KWOK_VERSION="v0.7.0"
KUBE_COMMANDS=(kube-apiserver kube-scheduler kube-controller-manager)

log() { echo "test-assets: $*"; }
fail() { echo "test-assets: ERROR: $*" >&2; exit 1; }

command -v go >/dev/null || fail "go is not on PATH"
mkdir -p "${BIN}"

# --- etcd, Prometheus and the image tools from Debian, installed beside the Go builds ---
# The image (hack/image.sh, test/image) is built with buildah and unpacked with skopeo and umoci;
# it takes its CA bundle and zoneinfo from ca-certificates and tzdata. apt-get downloads and
# unpacks while the builds below use the cores (on a bare machine a minute of the first run); its
# output goes to a log, shown when it fails.
missing_packages=()
command -v etcd >/dev/null || missing_packages+=(etcd-server)
command -v prometheus >/dev/null || missing_packages+=(prometheus)
for tool in buildah skopeo umoci; do
	command -v "${tool}" >/dev/null || missing_packages+=("${tool}")
done
[[ -s /etc/ssl/certs/ca-certificates.crt ]] || missing_packages+=(ca-certificates)
[[ -f /usr/share/zoneinfo/America/Los_Angeles ]] || missing_packages+=(tzdata)

install_debian_packages() {
	local sudo=() created_policy=""
	if [[ "$(id -u)" != 0 ]]; then
		command -v sudo >/dev/null || { echo "installing ${missing_packages[*]} needs root or sudo"; return 1; }
		sudo=(sudo)
	fi
	# The packages' install scripts would start etcd and prometheus as system services on their
	# default ports; tests start their own on free ports, so forbid service starts while installing.
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
		"${sudo[@]}" chmod 0755 /usr/sbin/policy-rc.d
		created_policy=1
	fi
	local status=0
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing_packages[@]}" ||
		status=$?
	if [[ -n "${created_policy}" ]]; then "${sudo[@]}" rm -f /usr/sbin/policy-rc.d; fi
	return "${status}"
}

debian_pid=""
debian_log="${BIN}/.apt-get.log"
if ((${#missing_packages[@]} == 0)); then
	log "etcd, prometheus, buildah, skopeo, umoci, CA certificates and tzdata already installed"
else
	command -v apt-get >/dev/null ||
		fail "${missing_packages[*]} missing and apt-get is unavailable; install them"
	log "apt-get install ${missing_packages[*]}, beside the builds (log: ${debian_log})"
	install_debian_packages >"${debian_log}" 2>&1 &
	debian_pid=$!
	# A failed build must not leave dpkg half-way: wait for apt-get before exiting, never kill it.
	trap 'wait "${debian_pid}" 2>/dev/null || true' EXIT
fi

# --- Kubernetes control plane, built from the version pinned in hack/kube/go.mod ---
kube_version="$(cd "${ROOT}/hack/kube" && go list -m -f '{{.Version}}' k8s.io/kubernetes)" ||
	fail "reading the k8s.io/kubernetes version from hack/kube/go.mod"
[[ "${kube_version}" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || fail "unexpected k8s.io/kubernetes version ${kube_version}"
kube_major="${BASH_REMATCH[1]}"
kube_minor="${BASH_REMATCH[2]}"

kube_up_to_date() {
	local cmd
	for cmd in "${KUBE_COMMANDS[@]}"; do
		[[ -x "${BIN}/${cmd}" ]] || return 1
		# Each prints "Kubernetes vX.Y.Z" as stamped by the ldflags below.
		[[ "$("${BIN}/${cmd}" --version 2>/dev/null)" == "Kubernetes ${kube_version}" ]] || return 1
	done
}

if kube_up_to_date; then
	log "${KUBE_COMMANDS[*]} ${kube_version} already in bin/"
else
	log "building ${KUBE_COMMANDS[*]} ${kube_version} into bin/ (first time takes several minutes)"
	ldflags="-s -w"
	ldflags+=" -X k8s.io/component-base/version.gitVersion=${kube_version}"
	ldflags+=" -X k8s.io/component-base/version.gitMajor=${kube_major}"
	ldflags+=" -X k8s.io/component-base/version.gitMinor=${kube_minor}"
	ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
	ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=${kube_version}"
	packages=()
	for cmd in "${KUBE_COMMANDS[@]}"; do packages+=("k8s.io/kubernetes/cmd/${cmd}"); done
	# The image's flavour, and hack/kube/go.mod requires this module's versions of the modules
	# both build: the Kubernetes libraries (client-go, apimachinery, api and theirs) compile once,
	# here, for the control plane, the image's linux/amd64 build and every build `make` runs.
	(cd "${ROOT}/hack/kube" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${BIN}/" "${packages[@]}") ||
		fail "building the Kubernetes control plane"
	kube_up_to_date || fail "built binaries do not report Kubernetes ${kube_version}"
fi

# --- kwok ---
kwok_up_to_date() {
	[[ -x "${BIN}/kwok" ]] && "${BIN}/kwok" --version 2>/dev/null | grep -q "${KWOK_VERSION}"
}
if kwok_up_to_date; then
	log "kwok ${KWOK_VERSION} already in bin/"
else
	log "installing kwok ${KWOK_VERSION} into bin/"
	GOBIN="${BIN}" go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" || fail "installing kwok"
	kwok_up_to_date || fail "bin/kwok does not report ${KWOK_VERSION}"
fi

# --- helm, for the chart's tests ---
"${ROOT}/hack/helm.sh" version --short >/dev/null || fail "building helm"
log "helm $("${BIN}/helm" version --template '{{.Version}}') in bin/"

if [[ -n "${debian_pid}" ]]; then
	if ! wait "${debian_pid}"; then
		cat "${debian_log}" >&2
		fail "apt-get install ${missing_packages[*]}"
	fi
	trap - EXIT
	for tool in etcd prometheus buildah skopeo umoci; do
		command -v "${tool}" >/dev/null || fail "${tool} still not on PATH after apt-get install"
	done
	log "installed ${missing_packages[*]}"
fi

log "ready: $(etcd --version | head -1), $(prometheus --version 2>&1 | head -1), $(buildah --version)"
