#!/usr/bin/env bash
# The tests' copy of ../shared/ha/setup.sh; tests/support/homeassistant.py runs it under a lock
# into the CI cache (HA_VENV=/var/cache/edge-tts-ci/ha-venv as root), so CI builds it once.
# Creates the Home Assistant Core venv (outside every repo) for the HA checks, with the pinned
# requirements of every integration a bare HA sets up plus mqtt and wyoming pre-installed, so HA
# pip-installs nothing at start. Prints the venv path.
# HA_VERSION: 2025.4.4 is the newest release that runs on Python 3.13.0 (2025.5+ needs >= 3.13.2,
# 2026.3+ needs >= 3.14.2). HA_PYTHON picks the interpreter (default: python3.13 on PATH or pyenv's).
set -e
V=${HA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/edge-tts-ha-venv}
PY=${HA_PYTHON:-$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3 2>/dev/null | tail -1)}
[ -n "$PY" ] || PY=$(command -v python3.13 || true)
[ -x "$PY" ] || { echo "no Python 3.13 found (set HA_PYTHON)" >&2; exit 1; }
HA_VERSION=${HA_VERSION:-2025.4.4}
# a Debian-built python keeps pyconfig.h under include/<multiarch>/: let C extensions find it
export CPPFLAGS="-I$("$PY" -c 'import sys; print(sys.base_prefix)')/include ${CPPFLAGS:-}"
if ! "$V/bin/python" -c "import paho.mqtt, wyoming, hass_frontend, aiohttp
from homeassistant.const import __version__ as v; assert v == '$HA_VERSION'" 2>/dev/null; then
  "$PY" -m venv --clear "$V" 2>/dev/null || {  # a Debian-built python has no ensurepip: pip from PyPI
    "$PY" -m venv --clear --without-pip "$V"; D=$(mktemp -d); python3 -m pip download -q --no-deps -d "$D" pip
    W=$(echo "$D"/pip-*.whl); "$V/bin/python" "$W/pip" install -q --no-index "$W"; rm -rf "$D"; }
  "$V/bin/pip" install -q "homeassistant==$HA_VERSION" >/dev/null 2>&1 || { echo "pip: no homeassistant==$HA_VERSION for $("$PY" -V)" >&2; exit 1; }
  HA_PKG=$("$V/bin/python" -c "import homeassistant, os; print(os.path.dirname(homeassistant.__file__))")
  "$V/bin/python" - "$HA_PKG" > "$V/ha-requirements.txt" <<'PY'
import json, sys
from homeassistant import bootstrap as b
todo = [*b.CORE_INTEGRATIONS, *b.DEFAULT_INTEGRATIONS, "isal", "http", "api", "config", "onboarding", "mqtt", "wyoming"]
seen, reqs = set(), set()
while todo:
    d = todo.pop()
    if d in seen: continue
    seen.add(d)
    try: m = json.load(open(f"{sys.argv[1]}/components/{d}/manifest.json"))
    except FileNotFoundError: continue
    reqs.update(m.get("requirements", [])); todo += m.get("dependencies", []) + m.get("after_dependencies", [])
print("\n".join(sorted(reqs)))
PY
  "$V/bin/pip" install -q -r "$V/ha-requirements.txt" -c "$HA_PKG/package_constraints.txt" 2>&1 | grep -v "^WARNING: Location" >&2 || true
  "$V/bin/python" -c "import paho.mqtt, wyoming, hass_frontend"
fi
command -v mosquitto >/dev/null || { apt-get update -qq && apt-get install -y -qq mosquitto mosquitto-clients >/dev/null; }
echo "$V"
