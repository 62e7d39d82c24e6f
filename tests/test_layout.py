"""The package layout the README's map promises: no import circles, no two modules with one
name, few top-level modules, contracts that do not import their implementations, and a
daemon that never imports the offline build tooling.

Every import counts: at the top, inside functions and under `TYPE_CHECKING` (a circle that
only the type checker sees still ties the two modules together for a reader and for mypy).
An import of `a.b.c` is an edge to the deepest of `a.b.c`, `a.b`, `a` that is a module of
the package; the parents' `__init__` run too, but counting them would make every package
that re-exports a child look circular.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent / "edge_tts"
PACKAGE = "edge_tts"

# What the daemon runs: it never imports the offline build tooling (onnx's graph tools,
# onnxruntime's quantizer, tf2onnx), not even inside a function nobody calls.
DAEMON = [
    f"{PACKAGE}.{name}"
    for name in (
        "daemon",
        "speech",
        "mqtt",
        "wyoming",
        "homeassistant",
        "messages",
        "audio",
        "cache",
        "voice",
        "text",
        "config",
        "state",
    )
]
TOOLING = f"{PACKAGE}.voicebuild"  # the quantizer and the voice importer

# Besides packages: __init__.py, __main__.py and at most one more.
MAX_TOP_LEVEL_MODULES = 3

# The contract of an audio sink names no sink: alsa.py, wav.py and wavdir.py import it.
CONTRACTS = {
    f"{PACKAGE}.audio.output": {
        f"{PACKAGE}.audio.alsa",
        f"{PACKAGE}.audio.wav",
        f"{PACKAGE}.audio.wavdir",
        f"{PACKAGE}.audio.device",
        f"{PACKAGE}.audio.ringbuffer",
    },
}


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its `__init__.py`)."""
    modules: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of the package that `name` (dotted) is or is inside."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _imported(module: str, path: Path, node: ast.ImportFrom, modules: set[str]) -> list[str]:
    """The dotted names a `from ... import ...` loads: each name that is a submodule
    (`from . import x` loads x, not its package again), else the module it names."""
    if node.level == 0:
        base = node.module or ""
    else:
        package = module.split(".")
        if path.name != "__init__.py":
            package.pop()
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([node.module] if node.module else [])])
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
        for alias in node.names
    ]


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = _imported(module, path, node, set(modules))
            else:
                continue
            for name in names:
                target = _resolve(name, modules)
                if target is not None and target != module:
                    graph[module].add(target)
    return graph


def _cycle_in(component: set[str], graph: dict[str, set[str]]) -> list[str]:
    """One circle through the strongly connected `component`, as a path back to its start."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        current = queue.pop(0)
        for nxt in sorted(graph[current] & component):
            if nxt == start:
                return [*paths[current], start]
            if nxt not in paths:
                paths[nxt] = [*paths[current], nxt]
                queue.append(nxt)
    raise AssertionError(f"{component} is not strongly connected")


def import_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each group of modules that import each other (Tarjan's algorithm): one circle
    through it, and the whole group."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [
        " -> ".join(_cycle_in(component, graph)) + f" (the group: {', '.join(sorted(component))})"
        for component in components
    ]


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    # Under TYPE_CHECKING, inside a function, and a package's __init__ re-exporting.
    assert f"{PACKAGE}.wyoming.context" in graph[f"{PACKAGE}.wyoming.sender"]
    assert f"{PACKAGE}.audio.sinks" in graph[f"{PACKAGE}.cli.say"]
    assert f"{PACKAGE}.config.sections" in graph[f"{PACKAGE}.config"]


def test_no_import_cycles() -> None:
    cycles = import_cycles(import_graph())
    assert not cycles, "modules that import each other:\n" + "\n".join(cycles)


def test_no_two_modules_with_one_name() -> None:
    names = Counter(
        path.name for path in ROOT.rglob("*.py") if path.name not in {"__init__.py", "__main__.py"}
    )
    assert sorted(name for name, count in names.items() if count > 1) == []


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def imports_reaching(start: list[str], graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Every module the modules of the packages `start` import, directly or through
    others: by name, one chain of imports that reaches it."""
    roots = sorted(module for module in graph if any(_in(module, p) for p in start))
    chains = {module: [module] for module in roots}
    queue = list(roots)
    while queue:
        current = queue.pop(0)
        for nxt in sorted(graph[current]):
            if nxt not in chains:
                chains[nxt] = [*chains[current], nxt]
                queue.append(nxt)
    return chains


def test_the_daemon_never_imports_the_build_tooling() -> None:
    graph = import_graph()
    reached = imports_reaching(DAEMON, graph)
    assert f"{PACKAGE}.voice.registry" in reached and f"{PACKAGE}.daemon.app" in reached
    leaks = [" -> ".join(chain) for name, chain in reached.items() if _in(name, TOOLING)]
    assert leaks == [], "the daemon imports the build tooling:\n" + "\n".join(leaks)


def test_the_commands_that_build_voices_reach_the_tooling() -> None:
    """The check above sees the tooling where it is imported (lazily, inside a command)."""
    reached = imports_reaching([f"{PACKAGE}.cli.quantize"], import_graph())
    assert f"{TOOLING}.quantizer" in reached


def test_few_top_level_modules() -> None:
    top = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_contracts_import_no_implementation() -> None:
    graph = import_graph()
    for contract, implementations in CONTRACTS.items():
        assert graph[contract] & implementations == set(), contract


# The packages in layers, lowest first, stated once: a package imports only packages of a
# lower rank (the layer below is all it may know), never one of its own rank or above, so
# there is no cycle between packages. The ground floor is the shared plumbing; the engine
# and the cache know no door and no daemon; no door knows another (Home Assistant rides
# on the MQTT door); the daemon and the commands wire everything.
RANKS: dict[str, int] = {
    "core": 0,  # telemetry's registry, the parts' lifecycle, a loop server, the program
    "state": 0,
    "config": 1,
    "text": 1,
    "audio": 2,
    "voice": 2,
    "messages": 2,
    "cache": 3,
    "voicebuild": 3,  # offline tooling, below the commands that run it
    "speech": 4,  # the engine
    "mqtt": 5,  # the doors
    "wyoming": 5,
    "http": 5,
    "homeassistant": 5,
    "daemon": 6,
    "tune": 6,
    "cli": 7,
}
SIDEWAYS = {("homeassistant", "mqtt")}  # HA's discovery and controls are MQTT messages


def package_graph() -> dict[str, set[str]]:
    """Which of our packages each package imports (any module of it, any import)."""
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        parts = module.split(".")
        if len(parts) < 3 and not (ROOT / parts[-1]).is_dir():
            continue  # edge_tts/__init__.py, __main__.py: the entry points
        package = parts[1]
        graph.setdefault(package, set()).update(
            target.split(".")[1] for target in targets if len(target.split(".")) > 1
        )
        graph[package].discard(package)
    return graph


def test_every_package_has_a_rank() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages == set(RANKS)


def test_packages_import_only_lower_layers() -> None:
    graph = package_graph()
    assert "core" in graph["speech"] and "speech" in graph["http"]  # the graph sees them
    wrong = sorted(
        f"{package} ({RANKS[package]}) imports {target} ({RANKS[target]})"
        for package, targets in graph.items()
        for target in targets
        if RANKS[target] >= RANKS[package] and (package, target) not in SIDEWAYS
    )
    assert wrong == [], "imports against the layers:\n" + "\n".join(wrong)


def code_map(doc: str) -> str:
    """A map of the package: the code block of `doc` (README.md, docs/*.md) that starts
    with `edge_tts/`."""
    text = (ROOT.parent / doc).read_text(encoding="utf-8")
    start = text.index("```\nedge_tts/\n") + 4
    return text[start : text.index("```", start)]


@pytest.mark.parametrize("doc", ["README.md", "docs/development.md"])
def test_the_package_maps_name_every_package_and_only_modules_there_are(doc: str) -> None:
    """A newcomer reads the maps before the code: they must be the tree as it is."""
    lines = code_map(doc).splitlines()
    mapped = {m.group(1) for line in lines if (m := re.match(r"  (\w+)/ ", line))}
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert mapped == packages
    files = {p.name for p in ROOT.rglob("*.py")}
    named = set(re.findall(r"\b(\w+\.py)\b", code_map(doc)))
    assert sorted(named - files) == []
