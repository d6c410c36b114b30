# icebeam developer targets. `make test` is the README's test command and what CI runs.
GO ?= go

.PHONY: test unit vet bench fuzz interop

# test runs everything: vet, the Go tests, then the cross-engine suite. The
# interop engines install (downloads, on a fresh machine) while vet and the Go
# tests run, and the runner matrix runs only its Beam Python leg: its prism leg
# is the same tests on the same runner as `make unit` (`make interop` runs both).
test:
	@mkdir -p "$${ICEBEAM_INTEROP_DEPS:-testing/interop/.deps}"
	@log="$${ICEBEAM_INTEROP_DEPS:-testing/interop/.deps}/install.log"; \
	bash testing/interop/install.sh >"$$log" 2>&1 & inst=$$!; \
	$(MAKE) vet unit; rc=$$?; \
	wait $$inst || { cat "$$log"; echo "make test: testing/interop/install.sh failed" >&2; exit 1; }; \
	cat "$$log"; [ $$rc -eq 0 ] || exit $$rc; \
	ICEBEAM_MATRIX_RUNNERS=python $(MAKE) interop

vet:
	CGO_ENABLED=0 $(GO) vet ./...

unit:
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 45m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseFilter -fuzztime 60s ./iceberg/read/

# Cross-engine interop suite (Spark, PyIceberg, DuckDB, PostgreSQL, Java REST
# catalog); installs its engines into testing/interop/.deps/ on first use.
interop:
	GO=$(GO) bash testing/interop/run.sh

