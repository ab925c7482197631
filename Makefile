# Karpenter's developer entry points. `make test` and `make sandbox` work on a bare machine:
# each installs what it needs first.
SHELL := /usr/bin/env bash -o pipefail -e
export GOFLAGS ?= -buildvcs=false
# Every build but the race detector's is the image's flavour (hack/image.sh): static, paths
# trimmed. So a first run compiles each package once for the image, the Kubernetes control plane
# (hack/test-assets.sh), `make verify` and the binaries the tests start (environment.GoBuild),
# not once per flavour. The race suite needs cgo and shares its flavour with nothing: it keeps
# full paths in its reports.
export CGO_ENABLED ?= 0
override GOFLAGS += -trimpath
# A package that hangs fails in 15 minutes (the slowest, the e2e tests, takes 5), leaving CI its
# time to report the rest.
GO_TEST_FLAGS ?= -count=1 -timeout 15m

.PHONY: all
all: build

## Generated code: deepcopy, CRDs and RBAC from the markers in pkg/, the API reference, the
## chart's CRDs, RBAC and webhook configurations from config/, and the settings and metrics
## references from the binaries' flags and collectors.
.PHONY: generate
generate:
	go tool controller-gen object paths=./pkg/apis/...
	go tool controller-gen crd paths=./pkg/apis/... output:crd:dir=config/crd
	go tool controller-gen rbac:roleName=karpenter-controller paths=./pkg/controllers/... output:rbac:dir=config/rbac
	go run ./hack/apidocs -crds config/crd -out docs/reference.md
	go run ./hack/chartgen -config config -chart charts/karpenter
	go test -count=1 -run '^TestSettingsReferenceIsCurrent$$' ./cmd/controller ./cmd/webhook -args -update >/dev/null
	go run ./hack/metricsdoc -out docs/reference/metrics.md

## Fails when a generated file is stale, the chart fails `helm lint`, go.mod (or the oracle
## module's, test/oracle) is untidy, the control plane's build (hack/kube) or the oracle compiles a
## module at another version than this module does (hack/modalign), code is not gofmt'd, go vet
## complains or golangci-lint (.golangci.yml) does.
.PHONY: verify
verify:
	hack/verify-generated.sh
	hack/helm.sh lint --strict charts/karpenter --set controller.image.repository=registry.example/karpenter
	hack/helm.sh lint --strict charts/karpenter-crd
	go mod tidy -diff
	cd test/oracle && go mod tidy -diff
	go run ./hack/modalign -C hack/kube $(addprefix k8s.io/kubernetes/cmd/,kube-apiserver kube-scheduler kube-controller-manager)
	go run ./hack/modalign -C test/oracle -test ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	$(MAKE) --no-print-directory lint

## The AWS emulator's instance-type catalogue (test/awsemulator/catalogue) and the controller's
## fallback prices (pkg/providers/pricing/zz_generated.pricing.go), from the data package pinned
## in hack/catalogue/go.mod. Not part of verify: the generator downloads a ~100 MB dataset.
.PHONY: catalogue
catalogue:
	cd hack/catalogue && go run . -catalogue ../../test/awsemulator/catalogue -pricing ../../pkg/providers/pricing/zz_generated.pricing.go

## golangci-lint at the version pinned in hack/tools/go.mod, built once into bin/.
.PHONY: lint
lint:
	hack/lint.sh

.PHONY: build
build:
	go build -o bin/ ./cmd/...

## The controller+webhook image, linux/amd64 and linux/arm64, built with buildah from scratch and
## Debian's files (hack/image.sh): bin/karpenter-image.oci.tar, its index digest beside it. Needs
## Debian's buildah, skopeo, ca-certificates and tzdata (`make test-assets` installs them).
.PHONY: image
image:
	hack/image.sh "$(or $(VERSION),dev)" bin/karpenter-image.oci.tar

## A release: the image archive, the chart package and the kubectl plugin for each of
## PLUGIN_PLATFORMS in bin/release/$(VERSION)/, and the install of config/ in
## releases/aws/$(VERSION).yaml, both naming the image by the digest just built.
IMAGE ?= public.ecr.aws/karpenter/karpenter
RELEASE_DIR = bin/release/$(VERSION)
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
.PHONY: release
release:
	@[ -n "$(VERSION)" ] || { echo "usage: make release VERSION=v0.1.0 [IMAGE=registry/karpenter]" >&2; exit 1; }
	@mkdir -p releases/aws $(RELEASE_DIR)
	hack/image.sh "$(VERSION)" $(RELEASE_DIR)/karpenter-$(VERSION).oci.tar >/dev/null
	hack/release.sh "$(VERSION)" "$(IMAGE)" "$$(cat $(RELEASE_DIR)/karpenter-$(VERSION).oci.tar.digest)" > releases/aws/$(VERSION).yaml.tmp || { rm -f releases/aws/$(VERSION).yaml.tmp; exit 1; }
	@mv releases/aws/$(VERSION).yaml.tmp releases/aws/$(VERSION).yaml
	hack/package-chart.sh "$(VERSION)" "$(IMAGE)" "$$(cat $(RELEASE_DIR)/karpenter-$(VERSION).oci.tar.digest)" $(RELEASE_DIR)
	@for platform in $(PLUGIN_PLATFORMS); do \
	  os=$${platform%/*}; arch=$${platform#*/}; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -o $(RELEASE_DIR)/kubectl-karpenter-$(VERSION)-$$os-$$arch ./cmd/kubectl-karpenter || exit 1; \
	done
	@echo "release $(VERSION): releases/aws/$(VERSION).yaml, $(RELEASE_DIR)/karpenter-$(VERSION:v%=%).tgz, $(RELEASE_DIR)/karpenter-$(VERSION).oci.tar, $(RELEASE_DIR)/kubectl-karpenter-$(VERSION)-<os>-<arch>"

## Control plane, kwok, etcd and Prometheus for the tests (cached in bin/).
.PHONY: test-assets
test-assets:
	hack/test-assets.sh

## Every package runs under the race detector but those that drive separately built binaries
## (DRIVER_PACKAGES: the end-to-end suite's controller, the docs' sandbox, helm, the image), whose
## own code only drives them; then those, the end-to-end suite beside the others; then the
## kube-scheduler oracle (test/oracle), a module of its own. Three packages, or three parallel
## tests of one, at once: most wait on the processes they start (API servers,
## kube-controller-manager's timers, the controller's passes) rather than use the two cores.
DRIVER_PACKAGES = ./test/e2e/ ./test/docs/ ./test/release/ ./test/image/
RACE_PACKAGES = $$(go list ./... | grep -vxE 'karpenter.sh/karpenter/test/(e2e|docs|release|image)')
.PHONY: test
test: test-assets verify
	CGO_ENABLED=1 GOFLAGS="$(filter-out -trimpath,$(GOFLAGS))" go test $(GO_TEST_FLAGS) -race -p 3 $(RACE_PACKAGES)
	go test $(GO_TEST_FLAGS) -parallel 3 $(DRIVER_PACKAGES)
	cd test/oracle && go test $(GO_TEST_FLAGS) .

## The scheduling benchmark of ../shared/bench/scheduling-workload.md; see docs/benchmarks.md.
.PHONY: bench
bench:
	go test -run '^$$' -bench . -benchtime 3x ./pkg/controllers/provisioning/scheduling/

## Karpenter against a local cluster, emulated AWS and Prometheus (docs/sandbox.md): applies
## docs/examples, plays a short story, then runs until Ctrl-C. STORY=0 skips the story;
## SANDBOX_EXIT_AFTER_STORY=1 exits 0 when the story ends (non-interactive check).
STORY ?= 1
.PHONY: sandbox
sandbox: test-assets
	go build -o bin/ ./cmd/controller ./cmd/webhook ./cmd/sandbox
	STORY=$(STORY) bin/sandbox

## The end-to-end suite alone, on the sandbox's stack; `make test` runs it with every package.
.PHONY: e2e
e2e: test-assets
	go test -count=1 -v ./test/e2e/

## The controller at scale on the sandbox's stack: N HorizontalAutoscalers, N MetricsProducers of
## each kind, P pods on K kwok nodes; CPU, RSS, API requests, Prometheus queries, reconciles and
## decision lag over SCALE_DURATION (docs/benchmarks.md). Not part of `make test`: it measures.
SCALE_AUTOSCALERS ?= 100
SCALE_PODS ?= 1000
SCALE_NODES ?= 100
SCALE_PERIOD ?= 10s
SCALE_DURATION ?= 1m
.PHONY: scale
scale: test-assets
	go run ./test/scale/autoscaling --autoscalers $(SCALE_AUTOSCALERS) --pods $(SCALE_PODS) --nodes $(SCALE_NODES) \
		--period $(SCALE_PERIOD) --duration $(SCALE_DURATION)

## The allocator's latency on the sandbox's stack: pods created at once → CreateFleet call and
## Running, p50/p99, for each pod count and --batch-idle-duration (docs/benchmarks.md). Not part
## of `make test`: it measures, it does not assert.
BENCH_PODS ?= 1000,1
BENCH_BATCH_IDLE ?= 1s,200ms
.PHONY: bench-provisioning
bench-provisioning: test-assets
	go run ./test/scale/provisioning --pods $(BENCH_PODS) --batch-idle-duration $(BENCH_BATCH_IDLE)
