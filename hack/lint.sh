#!/usr/bin/env bash
# Runs golangci-lint at the version pinned in hack/tools/go.mod over the main module, with
# .golangci.yml. The binary is built once into bin/ and rebuilt only when the pin or the Go
# toolchain changes: building it takes minutes, a cached run seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"
LINT="${BIN}/golangci-lint"
PACKAGE="github.com/golangci/golangci-lint/v2"

fail() { echo "lint: ERROR: $*" >&2; exit 1; }

version="$(cd "${ROOT}/hack/tools" && go list -m -f '{{.Version}}' "${PACKAGE}")" ||
	fail "reading the ${PACKAGE} version from hack/tools/go.mod"
go_version="$(go env GOVERSION)"
# What the binary prints when built below: the pinned version, stamped, and the toolchain.
expected="golangci-lint has version ${version#v} built with ${go_version}"

if [[ ! -x "${LINT}" ]] || [[ "$("${LINT}" version 2>/dev/null)" != "${expected}"* ]]; then
	echo "lint: building golangci-lint ${version} into bin/ (first time takes several minutes)"
	mkdir -p "${BIN}"
	# A date stamp keeps main from replacing the version with the tools module's "(devel)".
	ldflags="-s -w -X main.version=${version#v} -X main.date=pinned"
	(cd "${ROOT}/hack/tools" && go build -ldflags "${ldflags}" -o "${LINT}" "${PACKAGE}/cmd/golangci-lint") ||
		fail "building golangci-lint"
	[[ "$("${LINT}" version 2>/dev/null)" == "${expected}"* ]] || fail "bin/golangci-lint does not report ${expected}"
fi

cd "${ROOT}"
exec "${LINT}" run --allow-parallel-runners "$@" ./...
