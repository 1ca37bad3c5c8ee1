# agentd — the targets the README names.
GO       ?= go
BIN      ?= bin/agentd
PKGS     := ./...
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: build test test-go test-editors bench lint clean vsix

build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/agentd
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))agentd-sandbox ./cmd/agentd-sandbox

# vsix builds a platform-specific VS Code extension (this machine's platform, e.g. linux-x64)
# that bundles bin/agentd and bin/agentd-sandbox: editors/vscode/dist/agentd-<target>.vsix.
# From a fresh clone it first installs the extension's build tools (npm ci: esbuild, typescript,
# vsce, from package-lock.json).
vsix: build editors/vscode/node_modules/.package-lock.json
	cd editors/vscode && node scripts/package-platform.mjs --bin $(abspath $(dir $(BIN)))

editors/vscode/node_modules/.package-lock.json: editors/vscode/package-lock.json
	@command -v npm >/dev/null || { echo "make vsix needs Node.js 20 and npm (e.g. apt-get install nodejs npm)"; exit 1; }
	cd editors/vscode && npm ci --no-audit --no-fund

# test runs every test: Go (with the race detector) and, when their tools are installed, the
# editor end-to-end suites.
test: test-go test-editors

test-go:
	$(GO) test -race -count=1 $(PKGS)

test-editors: build
	@bash scripts/test-editors

bench: build
	@bash scripts/bench

# lint also builds for macOS: agentd compiles off Linux (without a sandbox, see docs/security.md).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)
	GOOS=darwin $(GO) build $(PKGS)

clean:
	rm -rf bin
