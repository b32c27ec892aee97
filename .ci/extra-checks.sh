#!/usr/bin/env bash
# Build checks beyond the README's test command (each command's own line; fail loudly).
set -euo pipefail
