#!/bin/bash
# Ray for the GPU machine, which cannot download and takes at most 64 MiB of carried files.
#
#   bench/ray_for_gpu_machine.sh RAY_WHEEL OUT_DIR
#
# RAY_WHEEL: Ray's wheel for the machine's Python (there: CPython 3.12, e.g.
# `pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 ray==2.60.0`).
# Writes OUT_DIR/ray-stripped.tar.xz: the wheel unpacked without what measuring candidates does not
# use (the Java jars, the dashboard's web client, rllib, data, serve, llm, tune, train): Ray 2.60.0's
# 79 MB wheel becomes a 27.5 MB archive (138 MB unpacked). On the machine:
#
#   mkdir -p /tmp/raypkg && tar xJf ray-stripped.tar.xz -C /tmp/raypkg
#   export PYTHONPATH=/tmp/raypkg:$PYTHONPATH RAY_USAGE_STATS_ENABLED=0
#
# plus those of Ray's dependencies the machine lacks (click filelock jsonschema msgpack packaging
# protobuf pyyaml requests; in November 2026 it lacked jsonschema and its attrs, referencing,
# rpds-py and jsonschema-specifications), carried as wheels and installed with
# `pip install --no-index --no-deps --target DIR`. Then `python bench/tune.py --ray-local ...`.
set -euo pipefail
wheel=$(realpath "$1"); out=$(realpath -m "$2")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
python3 - "$wheel" "$work" <<'PY'
import os, sys, zipfile
archive = zipfile.ZipFile(sys.argv[1])
for info in archive.infolist():
    path = archive.extract(info, sys.argv[2])
    mode = (info.external_attr >> 16) & 0o777
    if mode:  # the raylet and gcs_server binaries must stay executable
        os.chmod(path, mode)
PY
cd "$work"
rm -rf ray/jars ray/dashboard/client/build ray/rllib ray/data ray/serve ray/llm ray/tune ray/train
find . -name '*.js.map' -delete
mkdir -p "$out"
tar cJf "$out/ray-stripped.tar.xz" .
ls -l "$out/ray-stripped.tar.xz"
