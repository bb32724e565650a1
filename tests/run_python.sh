#!/usr/bin/env bash
# Runs a Python test script with the system python3 (Debian's), passing the arguments through.
exec python3 "$@"
