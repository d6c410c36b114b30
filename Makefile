# icebeam developer targets. `make test` is the README's test command and what CI runs.
GO ?= go

.PHONY: test unit vet bench fuzz interop

# test runs everything: vet, the Go tests, then the cross-engine suite.
test: vet unit interop

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

