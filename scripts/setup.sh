#!/usr/bin/env bash
# One-time setup: a virtual environment in .venv with torch's local CPU wheel first (a plain
# `pip install torch` would pull a multi-GB CUDA build), then this project with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q torch==2.13.0
python -m pip install -q -e '.[torch,fast,dask,bench,test]'
