#!/usr/bin/env bash
# One-time setup: a virtual environment in .venv with torch's local CPU wheel first (a plain
# `pip install torch` would pull a multi-GB CUDA build), then this project with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "setup: $*" >&2; }
say "creating the virtual environment .venv ($(python3 --version))"
python3 -m venv .venv
. .venv/bin/activate
say "upgrading pip"
python -m pip install -q --upgrade pip
say "installing torch 2.13.0 (the local CPU wheel, first, so nothing pulls a CUDA build)"
python -m pip install -q torch==2.13.0
say "installing spectral-harness (editable) with extras torch, fast (numba), dask, bench (asv), test (pytest)"
python -m pip install -q -e '.[torch,fast,dask,bench,test]'
say "done: . .venv/bin/activate, then harness --help"
