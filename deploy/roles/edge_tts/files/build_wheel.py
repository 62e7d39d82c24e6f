#!/usr/bin/env python3
"""Build the edge-tts-daemon wheel on the controller, once per source and dependency state.

The wheel's version is the project's version plus a PEP 440 local label naming what went
into it, e.g. `0.1.0+src.1a2b3c4d5e6f`: a changed source tree gives a new version (so pip on
the targets installs it), the same tree gives the same file (so nothing changes). The build
runs in a temporary copy, so the checkout gets no build/ or egg-info/ litter, and with a
fixed SOURCE_DATE_EPOCH, so the wheel's bytes depend on the sources only.

Next to the wheel, `<wheel>.constraints.txt` pins every dependency to the version installed
with the building python (the one the INT8 voice was quantized and the tests were run
with), so every device of the fleet gets the same onnxruntime, numpy, ... and rolling back
to an older wheel rolls its dependencies back too. Those versions are part of the label.

Prints one JSON line: {"wheel": "<path>", "constraints": "<path>", "version": "...",
"changed": true|false}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# What goes into the wheel (and so into its version label).
TOP_FILES = ("pyproject.toml", "README.md", "MANIFEST.in", "setup.cfg", "LICENSE")
PACKAGE = "edge_tts"
SKIP_PARTS = {"__pycache__"}
SKIP_SUFFIXES = {".pyc", ".pyo"}
EPOCH = "315532800"  # 1980-01-01, the earliest time a zip file can hold
# Not constrained on the devices: the project itself and the venv's own tooling.
UNCONSTRAINED = {"edge-tts-daemon", "pip", "setuptools", "wheel"}


def source_files(src: Path) -> list[Path]:
    files = [src / name for name in TOP_FILES if (src / name).is_file()]
    for path in sorted((src / PACKAGE).rglob("*")):
        rel = path.relative_to(src)
        if path.is_file() and not SKIP_PARTS & set(rel.parts) and path.suffix not in SKIP_SUFFIXES:
            files.append(path)
    return files


def source_digest(src: Path, files: list[Path], constraints: str) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(src).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(constraints.encode())
    return digest.hexdigest()[:12]


def installed_versions(python: str) -> str:
    """`name==version` of every distribution installed for `python`, but editable ones."""
    out = subprocess.run(
        [python, "-m", "pip", "list", "--format=freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = []
    for line in out.splitlines():
        name = line.partition("==")[0]
        if "==" in line and re.sub(r"[-_.]+", "-", name).lower() not in UNCONSTRAINED:
            lines.append(line.strip())
    return "".join(f"{line}\n" for line in sorted(lines, key=str.lower))


def project_version(pyproject: str) -> str:
    match = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.MULTILINE)
    if not match:
        raise SystemExit("build_wheel: no static version in pyproject.toml")
    return match.group(1).split("+")[0]


def build(src: Path, out: Path, python: str) -> dict[str, object]:
    files = source_files(src)
    constraints = installed_versions(python)
    pyproject = (src / "pyproject.toml").read_text(encoding="utf-8")
    version = f"{project_version(pyproject)}+src.{source_digest(src, files, constraints)}"
    name = re.search(r'^name\s*=\s*"([^"]+)"', pyproject, re.MULTILINE)
    dist = re.sub(r"[-_.]+", "_", name.group(1) if name else "edge-tts-daemon").lower()
    wheel = out / f"{dist}-{version}-py3-none-any.whl"
    pins = wheel.with_name(wheel.name + ".constraints.txt")
    result: dict[str, object] = {"wheel": str(wheel), "constraints": str(pins)}
    result["version"] = version
    if wheel.is_file() and pins.is_file():
        return {**result, "changed": False}
    out.mkdir(parents=True, exist_ok=True)
    pins.write_text(constraints, encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="edge-tts-wheel-") as tmp:
        tree = Path(tmp) / "src"
        for path in files:
            target = tree / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        (tree / "pyproject.toml").write_text(
            re.sub(
                r'^version\s*=\s*"[^"]+"',
                f'version = "{version}"',
                pyproject,
                count=1,
                flags=re.MULTILINE,
            ),
            encoding="utf-8",
        )
        built = Path(tmp) / "dist"
        env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PYTHONHASHSEED": "0"}
        subprocess.run(
            [python, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(built), str(tree)],
            check=True,
            env=env,
            stdout=sys.stderr,
        )
        (made,) = built.glob("*.whl")
        if made.name != wheel.name:
            raise SystemExit(f"build_wheel: expected {wheel.name}, pip built {made.name}")
        shutil.move(made, wheel.with_suffix(".part"))
        wheel.with_suffix(".part").rename(wheel)
    return {**result, "changed": True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="the project's checkout")
    parser.add_argument("--out", type=Path, required=True, help="directory for the wheel")
    parser.add_argument("--python", default=sys.executable, help="python with pip to build with")
    args = parser.parse_args()
    print(json.dumps(build(args.source.resolve(), args.out, args.python)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
