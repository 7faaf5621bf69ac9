# envsieve's build. `make build` builds envsieve (statically: it needs no cgo,
# and a static binary starts ~1 ms sooner), envsieve-daemon (the program
# behind `envsieve daemon` and `envsieve client`), the shim and
# envsieve-start (which starts a granted program through the launcher) into bin/.
# `make test` is what CI runs: vet, staticcheck (pinned), and every test with
# the race detector (the tests build the shim themselves).

GO ?= go
STATICCHECK_VERSION := v0.8.2
BIN := $(CURDIR)/bin

.PHONY: build man install uninstall test deps agents quick cross arm64 vet staticcheck race perentry fuzz bench clean

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/envsieve ./cmd/envsieve
	CGO_ENABLED=0 $(GO) build -o $(BIN)/envsieve-daemon ./cmd/envsieve-daemon
	$(MAKE) -s -C shim/libenvsieve OUT=$(BIN)/libenvsieve.so

# man: a page per command, generated from the commands themselves by a build
# of envsieve with the envsieve_docs tag (cobra/doc stays out of the binary
# users run).
man:
	$(GO) build -tags envsieve_docs -o $(BIN)/envsieve-docs ./cmd/envsieve
	rm -rf $(BIN)/man && $(BIN)/envsieve-docs __man $(BIN)/man

# install: envsieve and envsieve-daemon in bin/, the shim in lib/envsieve/
# (where envsieve looks for it), man pages, and bash, zsh and fish
# completions. DESTDIR stages it (packaging); uninstall removes every file.
PREFIX ?= /usr/local
DESTDIR ?=
ROOT = $(DESTDIR)$(PREFIX)
INSTALLED = bin/envsieve bin/envsieve-daemon lib/envsieve/libenvsieve.so lib/envsieve/envsieve-start lib/envsieve/envsieve-init \
	share/bash-completion/completions/envsieve share/zsh/site-functions/_envsieve \
	share/fish/vendor_completions.d/envsieve.fish
install: build man
	install -d $(ROOT)/bin $(ROOT)/lib/envsieve $(ROOT)/share/man/man1 \
		$(ROOT)/share/bash-completion/completions $(ROOT)/share/zsh/site-functions \
		$(ROOT)/share/fish/vendor_completions.d
	install -m 0755 $(BIN)/envsieve $(BIN)/envsieve-daemon $(ROOT)/bin/
	install -m 0644 $(BIN)/libenvsieve.so $(ROOT)/lib/envsieve/
	install -m 0755 $(BIN)/envsieve-start $(BIN)/envsieve-init $(ROOT)/lib/envsieve/
	install -m 0644 $(BIN)/man/*.1 $(ROOT)/share/man/man1/
	$(BIN)/envsieve completion bash > $(ROOT)/share/bash-completion/completions/envsieve
	$(BIN)/envsieve completion zsh > $(ROOT)/share/zsh/site-functions/_envsieve
	$(BIN)/envsieve completion fish > $(ROOT)/share/fish/vendor_completions.d/envsieve.fish

uninstall:
	rm -f $(addprefix $(ROOT)/,$(INSTALLED)) $(ROOT)/share/man/man1/envsieve*.1
	-rmdir $(ROOT)/lib/envsieve 2>/dev/null

# arm64: the test binaries of the pure packages, built for linux/arm64 and
# run under qemu-user, so that the arm64 claim is tested, not assumed.
# qemu-user does not pass Landlock's system calls on (ENOSYS): seal's
# Landlock tests run natively, and here only its portable ones.
ARM64_PKGS := sieve policy internal/detect internal/pattern internal/shellcmd redact seal
ARM64_SKIP := Landlock
arm64:
	@for p in $(ARM64_PKGS); do \
		t=$(BIN)/arm64/$$(echo $$p | tr / _).test; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) test -c -o $$t ./$$p || exit 1; \
		echo "arm64 (qemu): $$p"; (cd $$p && qemu-aarch64 $$t -test.count=1 -test.skip '$(ARM64_SKIP)') || exit 1; \
	done

test: deps agents vet cross arm64 staticcheck race perentry

# perentry: the seal's tests again with the envsieve-init that never makes
# the overlay of HOME, its fallback where the kernel refuses one (init.c).
PERENTRY_RUN := ^(TestSeal|TestSealWorkingDirInHome|TestSealOverlay|TestSealOverlayLinkedMask|TestSealWrites|TestSealReadOnlyHome|TestSealMasksHold|TestAgentLoginFiles|TestAgentLoginViewKeepsMasks|TestAgentLoginOwnDir|TestAgentLoginOwnDirFaked|TestAgentLoginLaterOwnDir|TestRuleBoundary|TestShSealed|TestSealedTreeReadsNoOutsideProcess)$$
perentry:
	ENVSIEVE_TEST_INIT_PER_ENTRY=1 $(GO) test -count=1 -run '$(PERENTRY_RUN)' ./cmd/envsieve/

# deps: the programs the tests run for real (the shim's runtimes table, the
# static and setuid programs of its attack tests, the unprivileged user's
# tests). Installed with apt-get when it is there and we are root; otherwise
# the list of what is missing and the command, and the test run stops.
DEPS := cc:gcc node:nodejs npm:npm python3:python3 perl:perl ruby:ruby git:git setpriv:util-linux curl:curl qemu-aarch64:qemu-user bwrap:bubblewrap socat:socat musl-gcc:musl-tools gh:gh /usr/bin/aws:awscli /usr/sbin/sshd:openssh-server ssh-agent:openssh-client
deps:
	@missing=""; for d in $(DEPS); do command -v $${d%%:*} >/dev/null 2>&1 || missing="$$missing $${d#*:}"; done; \
	test -n "$$(ls /usr/lib/*-linux-gnu/libc.a /usr/lib/libc.a 2>/dev/null)" || missing="$$missing libc6-dev"; \
	if [ -n "$$missing" ]; then \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			echo "make deps: installing with apt-get, as root:$$missing"; \
			apt-get update -q >/dev/null && \
			{ apt-get install --assume-no $$missing 2>/dev/null | grep -E '^(Need to get|After this)' || true; } && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
		else \
			echo "the tests run these for real and they are missing:$$missing"; \
			echo "install them, e.g.: sudo apt-get install$$missing"; exit 1; \
		fi; \
	fi

# agents: the real agent CLIs from npm, at pinned versions, for the tests that
# run them as an unprivileged user against stand-in model servers on loopback
# (cmd/envsieve/agents_test.go). As root they go where that user can read
# them; the tests find them there, or in ENVSIEVE_TEST_AGENTS.
AGENT_PKGS := @anthropic-ai/claude-code@2.1.331 @openai/codex@0.169.0 @google/gemini-cli@0.61.0
AGENTS_DIR ?= $(if $(filter 0,$(shell id -u)),/var/cache/envsieve-agents,$(HOME)/.cache/envsieve-agents)
export ENVSIEVE_TEST_AGENTS := $(AGENTS_DIR)
agents: deps
	@if [ "$$(cat $(AGENTS_DIR)/.pinned 2>/dev/null)" != "$(AGENT_PKGS)" ]; then \
		echo "installing into $(AGENTS_DIR): $(AGENT_PKGS)"; \
		mkdir -p $(AGENTS_DIR) && chmod 0755 $(AGENTS_DIR) && \
		npm install --no-audit --no-fund --loglevel=error --prefix $(AGENTS_DIR) $(AGENT_PKGS) && \
		echo "$(AGENT_PKGS)" > $(AGENTS_DIR)/.pinned; \
	fi

# The inner loop: every test without the race detector, the long ones cut
# short, less the end-to-end tests that each cost half a second of CPU or
# more (QUICK_SKIP: real agents, git, npm, aws and ssh clients, the 15 s
# stops, the seal matrices, the floods, the parity and probe matrices; the
# scripts of cmd/envsieve that cost as much say `[short] skip`); `make test`
# runs them all. It installs nothing: a test that needs a missing program
# fails and names `make deps` or `make agents`. -ldflags=-w links the test
# binaries without DWARF, a quarter less link CPU (no test reads it; `make
# test` links them whole). It is bound by CPU on a 2-core VM: with a cold
# test cache (go clean -testcache && /usr/bin/time make quick) docs/design.md
# gives the figures; a quarter to a third of it is the links of the test
# binaries.
QUICK_SLOW := TestSealWrites TestSealMasksHold TestSeal TestLoginFileGit TestLoginFileClients \
	TestNestedLoginFiles TestAWSEnv TestAWSRuleGrant TestAWSLoginFile TestAWSCLI TestAgentSandboxGrant \
	TestAgentsBrokered TestGoInstallHint TestMakeInstall TestCodexOAuthRefresh TestClaudeOAuthRefresh \
	TestStoppedLauncher TestStoppedLauncherBegun TestStartHeld TestGrantChannel TestSSHAgentFiltered \
	TestRealClients TestRedactLatency TestDaemonGrant TestKilledLauncher TestLeavesNothing \
	TestEnvShebangGrant TestRuleBoundary TestUnseen TestNpmGrant TestNpmThroughBroker TestNpmPing \
	TestHalfOpenFlood TestHalfOpenClosed TestCompressedEchoCurl TestBaseURL TestGitCloneThroughBroker \
	TestClientsThroughProxy TestHiddenCarry TestStartInPlace TestRuntimes TestServerStartBodyTimeout \
	TestDaemonHidesAsRunDoes TestDaemonExecControls TestDaemonLoad TestSSHPrivateKeys \
	TestScanLinearTime TestAgainstReference TestVerifyMatrix TestBrokeredAgentKey TestAuditFailsClosed \
	TestAWSConfigProfiles TestCodexLoginSealed TestClaudeLoginSealed TestGeminiLoginSealed TestAgentLoginFiles \
	TestStoppedHeldPipe TestAWSWebIdentityEnv TestAWSUserSetFiles TestAWSCLIMintedKeys \
	TestAWSCLIRoleMFAAndEnvironment TestAgentLoginLater TestAgentLoginLaterOwnDir TestStopSelf \
	TestParity TestCAVariablesOnlyForProxyMode TestProbeDetects TestNestedNarrows TestAgentMCPTokensFaked \
	TestDaemonAuditFailsClosed TestAgentMCPTokenFiles TestAgentLoginOwnDirFaked TestDaemonLoginFile
empty :=
space := $(empty) $(empty)
QUICK_SKIP := ^($(subst $(space),|,$(strip $(QUICK_SLOW))))$$
quick:
	$(GO) test -p 4 -short -ldflags=-w -skip '$(QUICK_SKIP)' ./...

# The portable core builds and vets for macOS (both arches), linux/arm64 and
# Windows;
# what is Linux-only sits behind build tags with a twin that says so.
CROSS := darwin/amd64 darwin/arm64 linux/arm64 windows/amd64
cross:
	@for t in $(CROSS); do echo "go vet for $$t"; GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./... || exit 1; done

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt -w these files: $$unformatted"; exit 1; fi
	$(GO) vet ./...

$(BIN)/staticcheck-$(STATICCHECK_VERSION):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/staticcheck $@

staticcheck: $(BIN)/staticcheck-$(STATICCHECK_VERSION)
	$(BIN)/staticcheck-$(STATICCHECK_VERSION) ./...

race:
	$(GO) test -race -count=1 -timeout 40m ./...

# A short run of every fuzz target (FUZZTIME=5m for a longer one): the
# targets are found, not listed, so a new one cannot be left out.
FUZZTIME ?= 20s
fuzz:
	@$(GO) test -list '^Fuzz' ./... | awk '/^Fuzz/ { t[n++] = $$1 } /^ok / { for (i = 0; i < n; i++) print $$2, t[i]; n = 0 }' > $(BIN)/fuzz-targets.txt || exit 1; \
	test -s $(BIN)/fuzz-targets.txt || { echo "no fuzz targets found"; exit 1; }; \
	echo "$$(wc -l < $(BIN)/fuzz-targets.txt) fuzz targets, $(FUZZTIME) each"; \
	while read -r pkg target; do \
		echo "fuzz $$pkg $$target"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$pkg" || exit 1; \
	done < $(BIN)/fuzz-targets.txt

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./sieve/ ./redact/ ./internal/...
	bash bench/compare.sh
	bash bench/detect.sh
	bash bench/shim.sh
	bash bench/daemon.sh
	bash bench/session.sh
	bash bench/load.sh

clean:
	rm -rf $(BIN)
