#!/usr/bin/env bash
# Regenerates into a scratch copy of the tree and fails if anything differs from the
# working tree, so a stale deepcopy or CRD cannot land.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -C "$root" --exclude=./bin --exclude=./.git --exclude=./.sandbox -cf - . | tar -C "$scratch" -xf -
(cd "$scratch" && make --no-print-directory generate >/dev/null)
status=0
for dir in pkg/apis config docs/reference.md docs/reference charts/karpenter charts/karpenter-crd; do
  if ! diff -r "$root/$dir" "$scratch/$dir" >/dev/null; then
    diff -ru "$root/$dir" "$scratch/$dir" | head -40 || true
    status=1
  fi
done
if [ $status -ne 0 ]; then
  echo "generated files are stale: run 'make generate' and commit the result" >&2
fi
exit $status
