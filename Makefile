# podrun: build, test and demo. `make test` is what CI runs (as root).

GO        ?= go
BIN       := bin
PODRUN    := $(BIN)/podrun
IMAGE_TAR := $(BIN)/busybox.tar
IMAGE_REF := podrun.local/busybox:1
E2E_TIMEOUT ?= 40m

.PHONY: all deps build cross test unit fuzz e2e test-vm vet lint fmt-check up bench clean

all: build

deps:
	@scripts/deps.sh

build:
	CGO_ENABLED=0 $(GO) build -o $(PODRUN) .

# Release builds for the boards: static, stripped, one per platform, with
# their sizes. `make test` runs it, so a 32-bit regression fails CI.
CROSS := amd64 arm64 arm/7
cross:
	@mkdir -p $(BIN)
	@set -e; for p in $(CROSS); do \
		arch=$${p%%/*}; arm=$${p#*/}; [ "$$arm" = "$$p" ] && arm=; \
		out=$(BIN)/podrun-linux-$$arch$${arm:+v$$arm}; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$$arm $(GO) build -trimpath -ldflags "-s -w" -o $$out .; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch GOARM=$$arm $(GO) vet ./...; \
		echo "cross: $$out $$(du -h $$out | cut -f1) ($$(stat -c %s $$out) bytes)"; \
	done

vet:
	$(GO) vet ./...

# staticcheck (pinned in go.mod as a tool; staticcheck.conf) and deadcode:
# no finding, and no function that only tests reach.
lint:
	$(GO) tool staticcheck ./...
	@dead=$$($(GO) tool deadcode .); \
	if [ -n "$$dead" ]; then echo "deadcode: unreachable from main (tests only, or nothing):" >&2; echo "$$dead" >&2; exit 1; fi

fmt-check:
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path './vendor/*' -not -path '*/testdata/*' -print0 | xargs -0 -r gofmt -l); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files are not formatted (run gofmt -w):" >&2; \
		echo "$$unformatted" >&2; \
		exit 1; \
	fi

# Unit tests: everything but the e2e package (no containerd; the pure core needs no
# root, a few volumes tests mount a tmpfs and do).
unit:
	$(GO) test $$($(GO) list ./... | grep -v /e2e)

# Fuzz targets (hostile input: manifests, subPaths, config volume payloads,
# container logs), each for FUZZTIME on top of its committed corpus
# (testdata/fuzz); `make fuzz FUZZTIME=10m` for a longer run.
FUZZTIME ?= 5s
FUZZ_TARGETS := manifest:FuzzParse volumes:FuzzSubPath volumes:FuzzAtomicWrite logs:FuzzReadLog
fuzz:
	GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

# End-to-end tests: a private containerd, runc, CNI; needs root (skips otherwise).
e2e:
	flock /tmp/podrun-e2e.lock $(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) ./e2e/...

# podrun where its users run it: a Debian 12 guest under qemu (software
# emulation) with systemd, cgroup v2 and Debian's containerd as a service;
# the guest is made once with debootstrap and cached in /var/cache/podrun-vm
# (vm/run.sh says what it checks). `make test-vm ARCH=arm64` for the arm64
# guest; `make test` runs both.
ARCH ?= amd64
.PHONY: test-vm-amd64 test-vm-arm64
test-vm: deps
	ARCH=$(ARCH) GO=$(GO) bash vm/run.sh
test-vm-amd64 test-vm-arm64: deps
	ARCH=$(@:test-vm-%=%) GO=$(GO) bash vm/run.sh

test: deps vet lint fmt-check cross unit fuzz e2e test-vm-amd64 test-vm-arm64

$(IMAGE_TAR): internal/testimage/*.go tools/mkimage/*.go
	@mkdir -p $(BIN)
	$(GO) run ./tools/mkimage -o $@ -ref $(IMAGE_REF)

up: deps build $(IMAGE_TAR)
	$(PODRUN) image import $(IMAGE_TAR)
	$(PODRUN) up examples/seed.yaml
	$(PODRUN) ps

# Benchmarks live in the e2e package (they need the same harness).
bench: deps
	flock /tmp/podrun-e2e.lock $(GO) test -count=1 -run '^$$' -bench . -benchtime 20x ./e2e/

# CPU and memory of `podrun up -f` supervising 20 probed pods (prints figures, asserts nothing).
.PHONY: bench-supervise
bench-supervise:
	flock /tmp/podrun-e2e.lock bash bench/supervise-cpu.sh

# podrun daemon: rename-to-Running reaction time, 50 pods from one directory, resident memory (prints figures, asserts nothing).
.PHONY: bench-compare
bench-compare: deps
	flock /tmp/podrun-e2e.lock bash bench/compare.sh

.PHONY: bench-daemon
bench-daemon: deps
	flock /tmp/podrun-e2e.lock bash bench/daemon.sh

# What reading a manifest costs: peak RSS and time of `validate`, of `up` (up to its
# connection to containerd: none is started) and of the daemon's reading of its
# directory, for each input of a corpus bench/input generates (typical, largest
# within the limits, densest, alias bombs). Prints figures, asserts nothing; no root.
.PHONY: bench-input
bench-input:
	$(GO) run ./bench/input

# What a pod costs the node: Pss by kind of process at 20 and 50 pods, under
# `up` and the daemon (prints figures, asserts nothing); BEFORE=<rev> compares.
.PHONY: bench-memory
bench-memory: deps
	flock /tmp/podrun-e2e.lock bash bench/memory.sh

# The real kubelet as the judge: the e2e suite's pod manifests on the kubelet
# anchor (../shared/kubelet-anchor: kubelet v1.34 and podrun's daemon side by
# side), field by field (prints equal/compared per pod, asserts nothing; needs
# root and the anchor's kubelet build, ~15 min once per machine: not in `test`).
.PHONY: kubelet-diff
kubelet-diff:
	flock /tmp/podrun-e2e.lock bash bench/kubelet-diff.sh

clean:
	rm -rf $(BIN)
