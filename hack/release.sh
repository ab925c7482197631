#!/usr/bin/env bash
# Renders the install of config/ (kustomize, built into kubectl) with the image tagged <version>,
# and pinned to <digest> when given, and prints it: `make release VERSION=v0.1.0` writes it to
# releases/aws/v0.1.0.yaml with the digest of the image it built. The release is never edited by
# hand; test/release applies it to a real kube-apiserver.
#
# usage: hack/release.sh <version> [image repository] [image digest]
set -euo pipefail

version="${1:-}"
image="${2:-public.ecr.aws/karpenter/karpenter}"
digest="${3:-}"
fail() { echo "release: $*" >&2; exit 1; }

[[ "${version}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
	fail "version must be semantic with a leading v (v0.1.0, v0.2.0-rc.1), not '${version}'"
# A registry may have a port (localhost:5000/karpenter); the last path element must have no tag.
[[ "${image}" =~ ^[a-z0-9./:_-]+$ && "${image##*/}" != *:* ]] ||
	fail "image must be a repository without a tag (public.ecr.aws/karpenter/karpenter), not '${image}'"
[[ -z "${digest}" || "${digest}" =~ ^sha256:[0-9a-f]{64}$ ]] ||
	fail "digest must be sha256:<64 hex digits>, not '${digest}'"
command -v kubectl >/dev/null || fail "kubectl (1.14 or later, for its built-in kustomize) is not on PATH"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
overlay="$(mktemp -d)"
trap 'rm -rf "${overlay}"' EXIT
# kustomize accepts only relative paths to a base.
cat >"${overlay}/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="${overlay}" "${root}/config")
images:
- name: public.ecr.aws/karpenter/karpenter
  newName: ${image}
  newTag: ${version}
${digest:+  digest: ${digest}}
YAML
rendered="$(kubectl kustomize "${overlay}")" || fail "rendering config/ with kustomize"

cat <<HEADER
# Karpenter ${version} for AWS: CRDs, RBAC, the controller and the admission webhook.
#   kubectl apply --server-side -f <this file>
# Rendered by \`make release VERSION=${version}\` from config/; do not edit.
---
HEADER
printf '%s\n' "${rendered}"
