# icebeam developer targets. `make test` is the README's test command and what CI runs.
GO ?= go

.PHONY: test unit vet bench fuzz

test: vet unit

vet:
	CGO_ENABLED=0 $(GO) vet ./...

unit:
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 45m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseFilter -fuzztime 60s ./iceberg/read/
