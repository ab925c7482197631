#!/usr/bin/env bash
# Runs helm at the version pinned in hack/helm/go.mod: `hack/helm.sh lint charts/karpenter`.
# The binary is built once into bin/helm and rebuilt only when the pin changes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELM="${ROOT}/bin/helm"
PACKAGE="helm.sh/helm/v3"

fail() { echo "helm: ERROR: $*" >&2; exit 1; }

version="$(cd "${ROOT}/hack/helm" && go list -m -f '{{.Version}}' "${PACKAGE}")" ||
	fail "reading the ${PACKAGE} version from hack/helm/go.mod"

if [[ ! -x "${HELM}" ]] || [[ "$("${HELM}" version --template '{{.Version}}' 2>/dev/null)" != "${version}" ]]; then
	echo "helm: building helm ${version} into bin/ (first time takes a few minutes)" >&2
	mkdir -p "${ROOT}/bin"
	# Built aside and renamed: tests run this concurrently, and a reader must never see half a file.
	(cd "${ROOT}/hack/helm" && go build -ldflags "-s -w -X ${PACKAGE}/internal/version.version=${version}" \
		-o "${HELM}.$$" "${PACKAGE}/cmd/helm") || fail "building helm"
	mv -f "${HELM}.$$" "${HELM}"
	[[ "$("${HELM}" version --template '{{.Version}}')" == "${version}" ]] || fail "bin/helm does not report ${version}"
fi

exec "${HELM}" "$@"
