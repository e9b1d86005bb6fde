# Trochilus — the two set-up commands are `make run` and `make test`; everything else is a helper.
SHELL := /bin/bash
GO ?= go
# Where tools/deps.sh installs; tools/isolated.sh points a copy of the checkout back here.
TROCHILUS_DEPS ?= $(CURDIR)/.deps
export TROCHILUS_DEPS
BIN := bin
CLI := $(BIN)/trochilus
APP := $(BIN)/trochilus-app
TINY := testdata/gen/tiny-q8_0.gguf
# Packages that make up the engine side (everything but the cgo window app).
ENGINE_PKGS := $$($(GO) list ./... | grep -v '/ui' | grep -v '/app/trochilus-app')

.PHONY: oracle-report all deps deps-run deps-package build cli run test gate check-self-contained fmt-check vet unit unit-v1 unit-v3 check-long fuzz bench clean app test-ui screenshot package check-package check-arm64 check-windows check-trained

all: build

deps:
	tools/deps.sh test

deps-run:
	tools/deps.sh run

deps-package:
	tools/deps.sh package

cli:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(CLI) ./app/trochilus

build: cli

# The window app (Fyne: cgo, GL and X11 headers).
app:
	CGO_ENABLED=1 $(GO) build -trimpath -o $(APP) ./app/trochilus-app

# make run: install what is needed, build, then start the app (or, with no display, the CLI demo,
# which needs nothing but Go: the window app's GL headers are installed only for the app).
run: cli
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then tools/deps.sh run && $(MAKE) --no-print-directory app && $(APP); else tools/demo.sh $(CLI); fi

# make test: the whole gate.
test: deps gate

gate: check-self-contained fmt-check vet unit oracle-report check-long check-arm64 check-windows test-ui screenshot check-package
	@echo "gate: all green"

# linux/arm64 under qemu: the kernels', quantizers' and tokenizer's tests, and tiny models' logits
# equal to amd64's at several thread counts and pass sizes (tools/check-arm64.sh).
check-arm64:
	GO=$(GO) tools/check-arm64.sh

# windows/amd64 under Wine: the engine's, kernels', GGUF's, quantizers', tokenizer's, experts' and
# assistant's tests, and tiny models' logits equal to Linux's at every SIMD tier, several thread
# counts and pass sizes (tools/check-windows.sh).
check-windows:
	GO=$(GO) tools/check-windows.sh

# Every Go file git tracks (still there) or would add is gofmt-clean (tools/check-fmt.sh), and the
# check is shown to catch what it is for (tools/check-fmt-test.sh).
fmt-check:
	@tools/check-fmt.sh
	@tools/check-fmt-test.sh

vet:
	CGO_ENABLED=0 $(GO) vet $(ENGINE_PKGS)
	CGO_ENABLED=0 $(GO) vet -tags trochilus_mutants ./engine
	CGO_ENABLED=0 GOARCH=arm64 $(GO) vet $(ENGINE_PKGS)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -o /dev/null ./app/trochilus
	CGO_ENABLED=0 GOOS=windows $(GO) build -o /dev/null ./app/trochilus
	@tools/check-nocgo.sh

# The repository needs nothing beside it (tools/check-self-contained.sh).
check-self-contained:
	@tools/check-self-contained.sh

# The unit tests run twice: GOAMD64=v3 lets the compiler fuse x*y+z into FMA, so any missing
# float32() rounding in a definition shows up as a difference between the two runs' outputs.
# The second run happens in a copy of the checkout alone in a temporary folder
# (tools/isolated.sh), so a test that reads a file from beside the checkout, or from one of its
# ignored paths, fails the gate.
unit: unit-v1
	tools/isolated.sh $(MAKE) --no-print-directory unit-v3

# The mutation tests (engine/mutant.go, build tag trochilus_mutants: production code carries no
# mutant branches) prove the oracle and determinism tests catch planted bugs.
unit-v1:
	TROCHILUS_REQUIRE_ORACLES=1 GOAMD64=v1 CGO_ENABLED=0 $(GO) test -count=1 -timeout 30m $(ENGINE_PKGS)
	TROCHILUS_REQUIRE_ORACLES=1 GOAMD64=v1 CGO_ENABLED=0 $(GO) test -count=1 -timeout 10m -tags trochilus_mutants -run Mutant ./engine

unit-v3:
	TROCHILUS_REQUIRE_ORACLES=1 GOAMD64=v3 CGO_ENABLED=0 $(GO) test -count=1 -timeout 30m $(ENGINE_PKGS)

# The engine against the PyTorch reference, with the measured maximum logit difference per model
# printed (a passing test's log is otherwise hidden).
oracle-report:
	@set -o pipefail; TROCHILUS_REQUIRE_ORACLES=1 CGO_ENABLED=0 $(GO) test -count=1 -v -run 'TestOracleOLMoE$$' ./engine | grep -E 'max \|diff\||^(--- |ok|FAIL)'

# Long checks (the exhaustive exp test and the like); part of the gate.
check-long:
	TROCHILUS_LONG=1 TROCHILUS_REQUIRE_ORACLES=1 CGO_ENABLED=0 $(GO) test -count=1 -timeout 30m -run 'Long' $(ENGINE_PKGS)

# The trained tiny models' whole recipes (tools/train/recipe.sh: OLMoE about 75 minutes on 2
# cores, Qwen3-MoE about 25):
# not part of the gate, which checks its data step and the committed file's digest.
check-trained:
	tools/train/recipe.sh build/train
	TRAIN_ARCH=qwen3moe tools/train/recipe.sh build/train-qwen3

# The window app's screens and main, headless: -tags ci selects Fyne's software driver. cgo.
test-ui:
	CGO_ENABLED=1 $(GO) vet -tags ci ./ui/... ./app/trochilus-app/...
	TROCHILUS_REQUIRE_ORACLES=1 CGO_ENABLED=1 $(GO) test -tags ci -count=1 -timeout 20m ./ui/... ./app/trochilus-app/...

# The real window app (GLFW, Mesa's software GL) under Xvfb: each screen to build/screenshots/
# NAME.png, each checked for the window's size (1100x720) and for not being blank. Part of the gate.
screenshot:
	GO=$(GO) tools/screenshot.sh build/screenshots

# make package: dist/trochilus-VERSION-linux-amd64.tar.xz and dist/trochilus-VERSION-windows-amd64.zip,
# both programs in each, and the CLI alone for linux-arm64, windows-arm64 and macos-arm64
# (packaging/package.sh; VERSION=x.y.z to name one). Reproducible; writes nothing in the checkout
# but dist/.
VERSION ?= 0.1.0
package: deps-package
	VERSION=$(VERSION) packaging/package.sh

# Part of the gate: builds the packages and checks that the checkout is unchanged, that every
# member is there with the right file type, icon, .desktop entry and Windows resources
# (tools/check-package.sh), and that the checker rejects broken packages (tools/check-package-test.sh).
check-package: deps-package
	tools/check-unchanged.sh env VERSION=$(VERSION) packaging/package.sh
	tools/check-package.sh dist $(VERSION)
	tools/check-package-test.sh dist $(VERSION)

# Fuzz every target for FUZZTIME each (default 2m).
FUZZTIME ?= 2m
fuzz:
	tools/fuzz.sh $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(ENGINE_PKGS)

clean:
	rm -rf $(BIN) testdata/gen dist build

# The SIMD tiers side by side (A/A controls inside; CPU-time figures, steady on a shared machine).
.PHONY: bench-kernels
bench-kernels:
	nice -n 10 $(GO) test -run '^$$' -bench 'TierCPU|TierTiles|TierSwiGLU|TierAttend|TierPairs' -benchtime 100ms -count 3 ./kernels
