# ftkit top-level build.
#   make        build the tools (build/bin), the runtime (build/lib, build/include), run the demo
#   make test   run every test (Go tests drive the C tests too)
GO      ?= go
BUILD   := $(CURDIR)/build
BIN     := $(BUILD)/bin
export PATH := $(BIN):$(PATH):/usr/local/go/bin
# Fuzz budget per target in `make test` (kept short; run longer by hand, e.g. FUZZTIME=5m).
# An execution count, not a duration: go1.26's fuzz coordinator can report a spurious
# "context deadline exceeded" when a duration runs out (golang/go#75804).
FUZZTIME ?= 400000x

TOOLS := recordmcount ftlink ftrace ftcc

.PHONY: all tools runtime demo test gotest fuzz vet clean

all: tools runtime demo

tools:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./cmd/,$(TOOLS))

runtime: tools
	$(MAKE) -C runtime BUILD=$(BUILD)

demo: tools runtime
	@if [ -f testdata/demo/Makefile ]; then $(MAKE) -s -C testdata/demo BUILD=$(BUILD) run; fi

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# Tests find the built tools and library through FTKIT_BUILD.
gotest: tools runtime
	FTKIT_BUILD=$(BUILD) $(GO) test -count=1 -timeout 25m ./...

fuzz:
	@for t in $$(grep -rhoE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' . | sed 's/^func //' | sort -u); do \
	  pkg=$$(grep -rlE "^func $$t\(" --include='*_test.go' . | head -1 | xargs dirname); \
	  echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
	  $(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	done

test: vet gotest fuzz
	$(MAKE) -C runtime BUILD=$(BUILD) test

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C runtime BUILD=$(BUILD) clean
