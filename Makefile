# ftkit top-level build.
#   make        build the tools (build/bin), the runtime (build/lib, build/include), run the demo
#   make test   run every test (Go tests drive the C tests too)
#   make install PREFIX=/usr/local DESTDIR=   tools, libftrt.a, headers, pkg-config and CMake
#               files, man pages;  make uninstall  removes them
#   make runtime-aarch64   the runtime for aarch64 (cross gcc: AARCH64_CC), into
#               build/lib/aarch64-linux-gnu/, where ftcc looks for it (installed by make install)
GO      ?= go
BUILD   := $(CURDIR)/build
BIN     := $(BUILD)/bin
export PATH := $(BIN):$(PATH):/usr/local/go/bin
# the Go package finds the runtime through pkg-config (build/lib/pkgconfig/ftrt-cgo.pc)
export PKG_CONFIG_PATH := $(BUILD)/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))
# Fuzz budget per target in `make test` (kept short; run longer by hand, e.g. FUZZTIME=5m).
# An execution count, not a duration: go1.26's fuzz coordinator can report a spurious
# "context deadline exceeded" when a duration runs out (golang/go#75804).
FUZZTIME ?= 400000x

TOOLS := recordmcount ftlink ftrace ftcc

VERSION ?= 0.2.0
PREFIX  ?= /usr/local
DESTDIR ?=
PKG     := $(CURDIR)/runtime/pkg
D       := $(DESTDIR)$(PREFIX)
HEADERS := $(notdir $(wildcard runtime/include/*.h))

.PHONY: all tools runtime runtime-aarch64 demo test gotest fuzz vet clean install uninstall pkgconfig

all: tools runtime demo

tools:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./cmd/,$(TOOLS))

runtime: tools
	$(MAKE) -C runtime BUILD=$(BUILD)
	@$(MAKE) --no-print-directory pkgconfig

# A cross runtime: built apart, its archive put under lib/<triple>/ (docs/ftcc.md).
AARCH64_CC ?= aarch64-linux-gnu-gcc
runtime-aarch64:
	$(MAKE) -C runtime CC=$(AARCH64_CC) ARCH=arm64 BUILD=$(BUILD)/cross/aarch64
	@mkdir -p $(BUILD)/lib/aarch64-linux-gnu
	cp $(BUILD)/cross/aarch64/lib/libftrt.a $(BUILD)/lib/aarch64-linux-gnu/libftrt.a
	@$(MAKE) --no-print-directory pkgconfig

# The pkg-config files of the runtimes under prefix $(1): lib/pkgconfig for the host's,
# lib/<triple>/pkgconfig for each cross runtime there (lib/<triple>/libftrt.a), with that
# target's instrumentation flags (ftcc's, docs/ftcc.md).
INSTRUMENT_x86_64-linux-gnu  := -pg -mfentry
INSTRUMENT_aarch64-linux-gnu := -fpatchable-function-entry=2
HOST_TRIPLE := $(shell $(CC) -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
define write_pc
	for sub in lib $$(cd $(2)/lib && for a in */libftrt.a; do [ -f "$$a" ] && echo lib/$$(dirname $$a); done); do \
	  triple=$${sub#lib/}; [ "$$sub" = lib ] && triple=$(HOST_TRIPLE); \
	  case $$triple in \
	    aarch64-linux-gnu) flags='$(INSTRUMENT_aarch64-linux-gnu)';; \
	    *) flags='$(INSTRUMENT_x86_64-linux-gnu)';; \
	  esac; \
	  mkdir -p $(2)/$$sub/pkgconfig || exit 1; \
	  for p in ftrt ftrt-cgo; do \
	    sed -e 's|@PREFIX@|$(1)|' -e 's|@VERSION@|$(VERSION)|' -e "s|@LIBSUB@|$$sub|" \
	      -e "s|@TRIPLE@|$$triple|" -e "s|@INSTRUMENT@|$$flags|" $(PKG)/$$p.pc.in > $(2)/$$sub/pkgconfig/$$p.pc || exit 1; \
	  done; \
	done
endef

# build/lib/pkgconfig/ftrt.pc: the build tree as a prefix (PKG_CONFIG_PATH=build/lib/pkgconfig)
pkgconfig:
	@$(call write_pc,$(BUILD),$(BUILD))

demo: tools runtime
	@if [ -f testdata/demo/Makefile ]; then $(MAKE) -s -C testdata/demo BUILD=$(BUILD) run; fi

# cgo (package runtime) needs build/include and build/lib: vet the package against the built runtime
vet: runtime
	$(GO) vet ./...
	cd examples/gosqlite && $(GO) vet .
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

install: tools runtime
	install -d $(D)/bin $(D)/lib/pkgconfig $(D)/lib/cmake/ftkit $(D)/include $(D)/share/man/man1
	install -m 755 $(addprefix $(BIN)/,$(TOOLS)) $(PKG)/ftkit-launch $(D)/bin/
	install -m 644 $(BUILD)/lib/libftrt.a $(D)/lib/
	if [ -f $(BUILD)/lib/aarch64-linux-gnu/libftrt.a ]; then install -d $(D)/lib/aarch64-linux-gnu && \
	  install -m 644 $(BUILD)/lib/aarch64-linux-gnu/libftrt.a $(D)/lib/aarch64-linux-gnu/; fi
	install -m 644 $(addprefix runtime/include/,$(HEADERS)) $(D)/include/
	$(call write_pc,$(PREFIX),$(D))
	install -m 644 $(PKG)/ftkitConfig.cmake $(D)/lib/cmake/ftkit/
	sed 's|@VERSION@|$(VERSION)|' $(PKG)/ftkitConfigVersion.cmake.in > $(D)/lib/cmake/ftkit/ftkitConfigVersion.cmake
	for t in $(TOOLS); do $(BIN)/$$t --man > $(D)/share/man/man1/$$t.1 || exit 1; done

uninstall:
	rm -f $(addprefix $(D)/bin/,$(TOOLS) ftkit-launch) $(D)/lib/libftrt.a $(D)/lib/aarch64-linux-gnu/libftrt.a \
	  $(D)/lib/aarch64-linux-gnu/pkgconfig/ftrt.pc $(D)/lib/aarch64-linux-gnu/pkgconfig/ftrt-cgo.pc \
	  $(addprefix $(D)/include/,$(HEADERS)) $(D)/lib/pkgconfig/ftrt.pc $(D)/lib/pkgconfig/ftrt-cgo.pc \
	  $(D)/lib/cmake/ftkit/ftkitConfig.cmake $(D)/lib/cmake/ftkit/ftkitConfigVersion.cmake \
	  $(addprefix $(D)/share/man/man1/,$(addsuffix .1,$(TOOLS)))
	-rmdir $(D)/lib/cmake/ftkit
	-rmdir $(D)/lib/aarch64-linux-gnu/pkgconfig $(D)/lib/aarch64-linux-gnu 2>/dev/null

clean:
	rm -rf $(BUILD)
	-$(MAKE) -C runtime BUILD=$(BUILD) clean
