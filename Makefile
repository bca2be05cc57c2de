# Parley: `make run` starts the server, `make test` runs every test. Both install what is
# missing first, so they work on a fresh machine with only Go on it.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/parley

.PHONY: run build test test-go test-fuzz test-e2e screenshots deps deps-e2e generate vet fmt bench bench-go bench-realtime bench-streaming bench-search bench-tree clean release-snapshot release-reproducible

run: deps build
	./$(BIN) serve $(ARGS)

build:
	$(GO) build -o $(BIN) ./cmd/parley

# deps installs the system packages Parley needs to run: the PostgreSQL server binaries,
# and Tesseract for image recognition by OCR.
deps:
	@bash scripts/ensure-postgres.sh
	@bash scripts/ensure-ocr.sh

# deps-e2e adds what the end-to-end suite needs: Node packages and headless Chromium.
deps-e2e: deps
	@bash scripts/ensure-e2e.sh

test: deps-e2e vet test-go test-fuzz test-e2e

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

test-go:
	$(GO) test -race -count=1 ./...

# test-fuzz runs each importer's and stream assembler's fuzz target, and the domain's (JSON
# values, cursors, ids, free text) and the JSON string scans (internal/jsonscan), for a fixed number of inputs (FUZZTIME=1m, or 200000x, for
# longer); inputs that fail are saved under the package's testdata/fuzz, which test-go replays.
# A count rather than a duration: Go 1.26's fuzz coordinator can fail a duration-bounded run
# with a spurious "context deadline exceeded" when the deadline strikes while a starved worker
# is mid-input (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 10000x
FUZZ_TARGETS := FuzzClaudeCode:interop/claudecode FuzzOpenAIChat:interop/openai FuzzAnthropicMessages:interop/anthropic \
	FuzzParleyJSON:interop/parleyjson FuzzChatStream:interop/openai FuzzMessageStream:interop/anthropic FuzzJSONScalar:. FuzzMessageCursor:. FuzzConversationCursor:. FuzzIDs:. FuzzCleanText:. FuzzScans:internal/jsonscan
test-fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$${t%%:*}$$" -fuzztime=$(FUZZTIME) ./$${t#*:}/; \
	done

test-e2e: build
	@bash scripts/e2e.sh

# screenshots: the history viewer's pictures in docs/ (viewer-*.png), taken in headless
# Chromium from a bin/parley of its own (e2e/screenshots.mjs).
screenshots: deps-e2e build
	cd e2e && node screenshots.mjs

generate:
	$(GO) generate ./...

# bench: Parley beside raw SQL and PostGraphile, with the benchmarks of their own whose targets
# exist (bench-streaming, bench-search, bench-tree: scripts/bench.sh), written to bench/report.md and
# bench/report.svg (about 15 minutes; BENCH_ARGS="-runs 3 -duration 2s -scale-messages 0" for a quick look).
bench: deps
	@bash scripts/bench.sh $(BENCH_ARGS)

# bench-go: the Go benchmarks of saving and reading history, each beside its raw SQL
# reference measured in the same run.
bench-go: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./server/

# bench-realtime: subscription fan-out, commit to delivery at 1, 100 and 1,000 websocket
# subscribers, delivery rate under sustained writes, memory per idle subscription
# (about 2 minutes; a Markdown report on stdout). REALTIME_ARGS passes flags, e.g.
# REALTIME_ARGS="-messages 50 -sustain 3s" for a quick look.
bench-realtime: deps build
	$(GO) run ./bench/fanout -parley $(BIN) $(REALTIME_ARGS)

# bench-streaming: live messages, 100 streams at 50 deltas/s with 10 websocket
# subscribers each, written as a relay of a provider's stream does (the deltas due since
# the last acknowledgement in each append) and one delta per append, then one stream:
# delivery latency, append round trip, DB writes, server CPU per delivery (a Markdown
# report on stdout). STREAMING_ARGS passes flags, e.g. STREAMING_ARGS="-duration 3s".
bench-streaming: deps build
	$(GO) run ./bench/streaming -parley $(BIN) $(STREAMING_ARGS)

# bench-search: search over 1,000,000 generated messages in 10,000 conversations: first-page
# latency of selective, common-word, filtered and prefix queries, the save with and
# without search, the index's size, each beside its target (a Markdown section on stdout
# and in bench/search-report.md; about 12 minutes on 2 busy cores). SEARCH_ARGS passes
# flags, e.g. SEARCH_ARGS="-messages 20000 -conversations 200" for a quick look.
bench-search: deps
	$(GO) run ./bench/search $(SEARCH_ARGS)

# bench-tree: the conversation tree beside a linear conversation in the same run: a page
# along a deep branch, adding a message to a branch, forking histories of 100, 10,000 and
# 100,000 messages (a few minutes). Writes bench/tree-report.md; TREE_ARGS passes flags,
# e.g. TREE_ARGS="-runs 20 -fork-history 10000" for a quick look.
bench-tree: deps
	$(GO) run ./bench/tree -out bench/tree-report.md $(TREE_ARGS)

# GoReleaser builds the release archives (.goreleaser.yaml). It is installed from the Go
# module proxy at a pinned version: v2.16.0, because v2.18 needs Go 1.27 and v2.17's
# nfpm needs a module (go.digitalxero.dev/go-msix) the proxy here refuses.
GORELEASER_VERSION := v2.16.0
GORELEASER := $(shell $(GO) env GOPATH)/bin/goreleaser

$(GORELEASER):
	GOFLAGS= $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

# GoReleaser reads the commit (its date stamps the binaries and archives) only when it can
# also read a remote's URL; in a clone or worktree without a remote it falls back to
# commit "none" and a zero date. Name a remote for it, in its environment only (git's
# GIT_CONFIG_* variables), when the repository has none.
GORELEASER_ENV := $(if $(shell git remote 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/parley-dev/parley)

# release-snapshot builds every release archive (linux, darwin; amd64, arm64) and
# checksums.txt into dist/, as a tagged release would, without publishing anything.
release-snapshot: $(GORELEASER)
	$(GORELEASER_ENV) $(GORELEASER) release --snapshot --clean --skip=publish

# release-reproducible builds the snapshot twice and checks that both give the same
# checksums: the same commit must give the same bytes. The first checksums wait outside
# the work tree: a file left in it would make the second build's binaries say
# vcs.modified=true (-dirty), and differ.
release-reproducible: release-snapshot
	@first=$$(mktemp); cp dist/checksums.txt $$first; \
	$(GORELEASER_ENV) $(GORELEASER) release --snapshot --clean --skip=publish || { rm -f $$first; exit 1; }; \
	if diff -u $$first dist/checksums.txt; then echo "reproducible: both builds gave the same checksums"; rm -f $$first; \
	else echo "not reproducible"; rm -f $$first; exit 1; fi

clean:
	rm -rf bin dist
