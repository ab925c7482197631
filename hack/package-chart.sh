#!/usr/bin/env bash
# Packages charts/karpenter for a release: version <version> (without its v), the image
# <repository>:<version>@<digest> as its default, into <directory>/karpenter-<version>.tgz; and
# charts/karpenter-crd into <directory>/karpenter-crd-<version>.tgz.
# `make release` runs it with the digest of the image it built.
#
# usage: hack/package-chart.sh <version> <image repository> <image digest> <directory>
set -euo pipefail

version="${1:?version}"
image="${2:?image repository}"
digest="${3:?image digest}"
out="${4:?output directory}"
fail() { echo "package-chart: $*" >&2; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT
cp -r "${root}/charts/karpenter" "${scratch}/karpenter"
values="${scratch}/karpenter/values.yaml"
# controller.image's empty defaults are the only lines of values.yaml at this indentation with
# these keys: the source chart names no image, the packaged one the image just built.
sed -i -e "s|^    repository: \"\"\$|    repository: ${image}|" -e "s|^    digest: \"\"\$|    digest: ${digest}|" "${values}"
grep -qx "    repository: ${image}" "${values}" && grep -qx "    digest: ${digest}" "${values}" ||
	fail "could not set controller.image in values.yaml"
mkdir -p "${out}"
"${root}/hack/helm.sh" lint --strict "${scratch}/karpenter" >/dev/null || fail "helm lint of the packaged values"
"${root}/hack/helm.sh" package "${scratch}/karpenter" --version "${version#v}" --app-version "${version}" \
	--destination "${out}" >&2
"${root}/hack/helm.sh" package "${root}/charts/karpenter-crd" --version "${version#v}" --app-version "${version}" \
	--destination "${out}" >&2
