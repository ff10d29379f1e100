#!/usr/bin/env bash
# Builds the BigQuery API emulator the BigQuery sink's tests run against
# (github.com/goccy/bigquery-emulator, pinned in this directory's go.mod) to
# testing/bqemulator/bin/bigquery-emulator. Its SQL engine is C++ (cgo) and
# builds only with clang: about 14 minutes cold on 2 cores, seconds once the
# Go build cache holds it. This module is separate from the product's, so the
# product's `go build ./...` stays cgo-free.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v clang >/dev/null 2>&1; then
  echo "build.sh: clang is required (apt-get install clang)" >&2
  exit 1
fi
mkdir -p bin
CGO_ENABLED=1 CC=clang CXX=clang++ go build -o bin/bigquery-emulator github.com/goccy/bigquery-emulator/cmd/bigquery-emulator
