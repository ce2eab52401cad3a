# podrun: build, install, release tarballs, test and demo. `make test` is what CI runs (as root).
#
#   make                      bin/podrun (needs Go, see go.mod)
#   sudo make install         podrun, its systemd unit and docs under PREFIX (/usr/local)
#   sudo make up              the runtime from apt, then a demo pod (examples/seed.yaml)
#   make dist                 static tarballs for amd64, arm64 and armv7 with SHA256SUMS
#   sudo make test            everything CI checks

# Go: the one on PATH, else the official tarball's /usr/local/go/bin (sudo's
# PATH does not have it); scripts/gocheck.sh says what is wrong when neither fits.
ifeq ($(origin GO),undefined)
GO := $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)
endif
BIN       := bin
PODRUN    := $(BIN)/podrun
IMAGE_TAR := $(BIN)/busybox.tar
IMAGE_REF := podrun.local/busybox:1
E2E_TIMEOUT ?= 40m

# The version in the binary (`podrun version`) and the release's timestamp,
# both from the commit (git runs as the checkout's owner may not: sudo).
GIT     := git -c safe.directory='$(CURDIR)'
VERSION ?= $(or $(shell $(GIT) describe --tags --always --dirty 2>/dev/null),dev)
SOURCE_DATE_EPOCH ?= $(or $(shell $(GIT) log -1 --format=%ct 2>/dev/null),0)
# The signature policy's library (go.podman.io/image/v5/signature) verifies
# GPG signatures with Go's OpenPGP under this tag, not with gpgme (cgo): every
# go command of the Makefile builds with it (plain `go build` does not: give
# it -tags containers_image_openpgp).
GOTAGS := containers_image_openpgp
export GOFLAGS := $(strip $(GOFLAGS) -tags=$(GOTAGS))
# Static, reproducible: no cgo, no paths or build id, no VCS stamp (VERSION
# says the commit; stamping fails under sudo in a checkout owned by another user).
GOBUILD := CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "-s -w -buildid= -X main.version=$(VERSION)"
GO_SOURCES := go.mod go.sum $(shell find . -name '*.go' -not -name '*_test.go' -not -path './e2e/*' -not -path './bin/*' 2>/dev/null)

# Install layout (GNU conventions; DESTDIR for packagers: make install DESTDIR=/tmp/pkg PREFIX=/usr).
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR  ?= $(PREFIX)/share/doc/podrun
PODRUN_BINARY ?= $(PODRUN)

# Release tarballs: one per architecture, each the install tree under PREFIX
# /usr/local (bin/, lib/systemd/system/, share/doc/podrun/).
DIST        ?= $(BIN)/dist
DIST_ARCHES := amd64 arm64 armv7

.PHONY: all deps deps-up deps-e2e deps-test go-check build install install-files uninstall dist check-dist check-install cross test unit fuzz e2e e2e-cluster cluster-bin test-vm vet lint fmt-check up bench clean

all: build

# Debian packages (scripts/deps.sh says which set has what).
deps:
	@scripts/deps.sh runtime
deps-up:
	@scripts/deps.sh runtime demo
deps-e2e:
	@scripts/deps.sh e2e
deps-test:
	@scripts/deps.sh test

go-check:
	@scripts/gocheck.sh "$(GO)"

build: go-check
	$(GOBUILD) -o $(PODRUN) .

# The file target: `sudo make install` after `make` builds nothing (and needs no Go).
$(PODRUN): $(GO_SOURCES)
	@scripts/gocheck.sh "$(GO)"
	$(GOBUILD) -o $@ .

install: $(PODRUN)
	@$(MAKE) --no-print-directory install-files PODRUN_BINARY=$(PODRUN)
	@if [ -z "$(DESTDIR)" ]; then \
		echo "installed $(BINDIR)/podrun, $(UNITDIR)/podrun-daemon.service, $(DOCDIR)"; \
		echo "the daemon: put pod manifests in /etc/podrun/manifests, then systemctl daemon-reload && systemctl enable --now podrun-daemon"; \
	fi

# The files of an install, from PODRUN_BINARY; the unit names BINDIR and DOCDIR.
install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR)/examples
	install -m 0755 $(PODRUN_BINARY) $(DESTDIR)$(BINDIR)/podrun
	sed -e 's|/usr/local/bin/podrun|$(BINDIR)/podrun|g' -e 's|/usr/local/share/doc/podrun|$(DOCDIR)|g' \
		examples/podrun-daemon.service >$(DESTDIR)$(UNITDIR)/podrun-daemon.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/podrun-daemon.service
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	install -m 0644 examples/*.yaml examples/*.service $(DESTDIR)$(DOCDIR)/examples/

# Removes what install made; pods, their state (/var/lib/podrun), logs
# (/var/log/pods) and /etc/podrun stay.
uninstall:
	@if [ -z "$(DESTDIR)" ] && { systemctl is-active --quiet podrun-daemon || systemctl is-enabled --quiet podrun-daemon; } 2>/dev/null; then \
		echo "uninstall: podrun-daemon is enabled or running: systemctl disable --now podrun-daemon first" >&2; exit 1; \
	fi
	rm -f $(DESTDIR)$(BINDIR)/podrun $(DESTDIR)$(UNITDIR)/podrun-daemon.service
	rm -rf $(DESTDIR)$(DOCDIR)

dist: go-check
	@GO="$(GO)" VERSION="$(VERSION)" SOURCE_DATE_EPOCH="$(SOURCE_DATE_EPOCH)" \
		scripts/dist.sh $(DIST) $(DIST_ARCHES)

# The release is reproducible: a second `make dist` from a copy of the tree
# at another path gives the same SHA256SUMS.
check-dist: dist
	@GO="$(GO)" VERSION="$(VERSION)" SOURCE_DATE_EPOCH="$(SOURCE_DATE_EPOCH)" \
		scripts/check-dist.sh $(DIST)

# make install DESTDIR=<temp> lays out the binary, the unit and the docs.
check-install: $(PODRUN)
	@scripts/check-install.sh

# Every package vetted for each release architecture (a 32-bit regression
# fails CI); the binaries are the release's (make dist), sizes printed.
cross: dist
	@set -e; for a in $(DIST_ARCHES); do \
		case $$a in armv7) goarch=arm goarm=7;; *) goarch=$$a goarm=;; esac; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$goarch GOARM=$$goarm $(GO) vet ./...; \
	done
	@cat $(DIST)/SIZES

vet:
	$(GO) vet ./...

# staticcheck (pinned in go.mod as a tool; staticcheck.conf) and deadcode:
# no finding, and no function that only tests reach.
lint:
	$(GO) tool staticcheck -tags $(GOTAGS) ./...
	@dead=$$($(GO) tool deadcode -tags $(GOTAGS) .); \
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
# The tests that start a real control plane (CLUSTER_TESTS) are make e2e-cluster's.
e2e: deps-e2e
	GO=$(GO) TIMEOUT=$(E2E_TIMEOUT) bash scripts/e2e.sh -skip '$(CLUSTER_TESTS)'

# The cluster tests: podrun as a node of a real control plane (etcd,
# kube-apiserver, controller manager, scheduler, kubectl of k8s.io/kubernetes
# CLUSTER_KVER), ../shared/cluster-anchor's start.sh run by the tests, and the
# real kubelet beside it. Their binaries are built once per machine by
# cluster-anchor's and kubelet-anchor's build.sh and cached
# in /var/cache/podrun-cluster, keyed by version and build scripts
# (scripts/cluster-bin.sh; ~25 core-minutes, 13–20 min on 2 idle cores from empty Go caches).
CLUSTER_KVER   ?= v1.37.2
CLUSTER_ANCHOR ?= $(abspath $(CURDIR)/../shared/cluster-anchor)
CLUSTER_TESTS  := ^TestNode
CLUSTER_BIN_SH  = KVER=$(CLUSTER_KVER) CLUSTER_ANCHOR=$(CLUSTER_ANCHOR) GO=$(GO) scripts/cluster-bin.sh
cluster-bin:
	@$(CLUSTER_BIN_SH) >/dev/null
e2e-cluster: deps-e2e cluster-bin
	@bin=$$($(CLUSTER_BIN_SH) --cached) && \
	PODRUN_CLUSTER_BIN=$$bin PODRUN_CLUSTER_ANCHOR=$(CLUSTER_ANCHOR) GO=$(GO) TIMEOUT=$(E2E_TIMEOUT) bash scripts/e2e.sh -run '$(CLUSTER_TESTS)'

# podrun where its users run it: a Debian 12 guest under qemu (software
# emulation) with systemd, cgroup v2 and Debian's containerd as a service;
# the guest is made once with debootstrap and cached in /var/cache/podrun-vm
# (vm/run.sh says what it checks). `make test-vm ARCH=arm64` for the arm64
# guest; `make test` runs both.
# The guest runs the podrun of `make dist`'s tarball for its architecture.
ARCH ?= amd64
.PHONY: test-vm-amd64 test-vm-arm64
test-vm: deps-test dist
	ARCH=$(ARCH) GO=$(GO) PODRUN_TARBALL=$(DIST)/podrun-$(VERSION)-linux-$(ARCH).tar.gz bash vm/run.sh
test-vm-amd64 test-vm-arm64: deps-test dist
	ARCH=$(@:test-vm-%=%) GO=$(GO) PODRUN_TARBALL=$(DIST)/podrun-$(VERSION)-linux-$(@:test-vm-%=%).tar.gz bash vm/run.sh

# make test: the checks (test-checks) and, beside them, the control plane's
# build (cluster-bin, only the first time on a machine; its Go builds run at
# nice 19, so they take what the checks leave of the CPU: much of it while the
# e2e suite and the guests wait on their pods); the cluster tests come last,
# once both are done.
.PHONY: test-checks
test: deps-test
	@test -r $(CLUSTER_ANCHOR)/build.sh || { echo "make test: no $(CLUSTER_ANCHOR)/build.sh: the cluster tests need ../shared/cluster-anchor beside the checkout (or CLUSTER_ANCHOR=DIR)" >&2; exit 1; }
	@$(CLUSTER_BIN_SH) >/dev/null & build=$$!; \
	status=0; $(MAKE) --no-print-directory test-checks || status=$$?; \
	if kill -0 $$build 2>/dev/null; then echo "make test: waiting for the control plane's build (scripts/cluster-bin.sh; kept for later runs)" >&2; fi; \
	wait $$build || { echo "make test: the control plane's build failed (make cluster-bin)" >&2; exit 1; }; \
	[ $$status -eq 0 ] || exit $$status; \
	$(MAKE) --no-print-directory e2e-cluster
test-checks: vet lint fmt-check cross check-dist check-install unit fuzz e2e test-vm-amd64 test-vm-arm64

$(IMAGE_TAR): internal/testimage/*.go tools/mkimage/*.go
	@scripts/gocheck.sh "$(GO)"
	@mkdir -p $(BIN)
	$(GO) run ./tools/mkimage -o $@ -ref $(IMAGE_REF)

# The demo: only what running a pod needs from apt (scripts/deps.sh runtime,
# and busybox-static for the offline demo image), then examples/seed.yaml.
up: deps-up $(PODRUN) $(IMAGE_TAR)
	$(PODRUN) image import $(IMAGE_TAR)
	$(PODRUN) up examples/seed.yaml
	$(PODRUN) ps
	@echo "the seed pod is running: $(PODRUN) down examples/seed.yaml removes it ('sudo make install' puts podrun on PATH)"

# Benchmarks live in the e2e package (they need the same harness); those of
# a cluster node (BenchmarkNode*, a control plane each) are bench-node's.
bench: deps-e2e
	flock /tmp/podrun-e2e.lock $(GO) test -count=1 -run '^$$' -bench . -skip '^BenchmarkNode' -benchtime 20x ./e2e/

# What one podrun node costs its control plane (the API server's requests per
# minute, idle with 10 pods) and itself (50 pods from kubectl apply to
# Running, the daemon's Pss), on cluster-anchor's control plane, then the
# same beside the real kubelet (BenchmarkNodeBesideKubelet: skipped without
# kubelet-anchor's kubelet binary) and the reboot with the API server down
# (prints figures, asserts nothing).
.PHONY: bench-node
bench-node: deps-e2e cluster-bin
	@bin=$$($(CLUSTER_BIN_SH) --cached) && \
	PODRUN_CLUSTER_BIN=$$bin PODRUN_CLUSTER_ANCHOR=$(CLUSTER_ANCHOR) flock /tmp/podrun-e2e.lock $(GO) test -count=1 -run '^$$' -bench '^(BenchmarkNode|BenchmarkRebootAPIDown$$)' -benchtime 1x -timeout 50m ./e2e/

# What a container writing short lines flat out costs the node: the stream
# keeper's CPU per MiB, and another pod's HTTP latency and CPU meanwhile
# (prints figures, asserts nothing).
.PHONY: bench-keeper
bench-keeper: deps-e2e
	flock /tmp/podrun-e2e.lock $(GO) test -count=1 -run '^$$' -bench BenchmarkKeeperFlood -benchtime 3x -timeout 30m ./e2e/

# CPU and memory of `podrun up --foreground` supervising 20 probed pods (prints figures, asserts nothing).
.PHONY: bench-supervise
bench-supervise:
	flock /tmp/podrun-e2e.lock bash bench/supervise-cpu.sh

# podrun daemon: rename-to-Running reaction time, 50 pods from one directory, resident memory (prints figures, asserts nothing).
.PHONY: bench-compare
bench-compare: deps-e2e
	flock /tmp/podrun-e2e.lock bash bench/compare.sh

.PHONY: bench-daemon
bench-daemon: deps-e2e
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
bench-memory: deps-e2e
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
