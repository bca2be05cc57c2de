# Parley: `make run` starts the server, `make test` runs every test. Both install what is
# missing first, so they work on a fresh machine with only Go on it.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/parley

.PHONY: run build test test-go test-e2e deps deps-e2e generate vet fmt bench bench-go clean

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

test: deps-e2e vet test-go test-e2e

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

test-go:
	$(GO) test -race -count=1 ./...

test-e2e: build
	@bash scripts/e2e.sh

generate:
	$(GO) generate ./...

bench: deps
	@bash scripts/bench.sh

# bench-go: the Go benchmarks of saving and reading history, each beside its raw SQL
# reference measured in the same run.
bench-go: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./server/

clean:
	rm -rf bin
