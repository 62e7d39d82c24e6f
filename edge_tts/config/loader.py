"""YAML → settings: unknown keys with a "did you mean" hint, dotted key paths in every
message, every problem of a file reported at once."""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

import yaml

from .checks import (
    Checked,
    ConfigError,
    Invalid,
    closest,
    coerce,
    combine,
    is_section,
    join,
    non_none,
    rules_of,
    show,
)
from .credentials import PASSWORD_CREDENTIAL
from .sections import Settings

_S = TypeVar("_S", bound=Checked)

# Keys that are refused with advice rather than a spelling suggestion.
_REFUSED_KEYS = {
    "broker.password": (
        "the password must not be written in the config file, which is world-readable; "
        "put it in a file only the daemon can read and set broker.password_file, or give "
        f'it as the systemd credential "{PASSWORD_CREDENTIAL}" '
        f"(LoadCredential={PASSWORD_CREDENTIAL}:/path/to/file), read from "
        f"$CREDENTIALS_DIRECTORY/{PASSWORD_CREDENTIAL}"
    ),
}


def load_settings(path: Path, overrides: Mapping[str, object] | None = None) -> Settings:
    """Read and check a YAML settings file. `overrides` maps dotted keys to values
    (e.g. {"audio.volume": 0.5}); they are checked like the file's own values.
    Messages do not repeat the file name: callers print it."""
    raw = _read_yaml(path)
    if overrides:
        raw = _with_overrides(raw, overrides)
    return settings_from_mapping(raw)


def settings_from_mapping(data: Mapping[str, object]) -> Settings:
    if not isinstance(data, Mapping):
        raise ConfigError(f"the top level must be a mapping of settings, got {show(data)}")
    return _build(Settings, {"device_id": socket.gethostname(), **data}, "")


def default_settings() -> Settings:
    return settings_from_mapping({})


def config_keys() -> tuple[str, ...]:
    """Every key a settings file may hold, dotted; `voices.*` stands for any voice name."""
    return tuple(_keys_of(Settings, ""))


# --- reading YAML ----------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """safe_load, except that a key given twice is an error: PyYAML keeps the last silently."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = str(key_node.value)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def _read_yaml(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read the settings file: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8 text (byte {err.start})") from err
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # safe: a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        raise ConfigError(_yaml_problem(err)) from err
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {err}") from err
    if data is None:  # empty, or only comments
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping of settings, got {show(data)}")
    return data


def _yaml_problem(err: yaml.MarkedYAMLError) -> str:
    mark = err.problem_mark or err.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    context = f" ({err.context})" if err.context else ""
    return f"YAML syntax error{where}: {err.problem or 'cannot parse'}{context}"


def _with_overrides(
    raw: Mapping[str, object], overrides: Mapping[str, object]
) -> dict[str, object]:
    merged = dict(raw)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = merged
        for depth, part in enumerate(parents):
            child = node.get(part) or {}
            if not isinstance(child, Mapping):
                at = ".".join(parents[: depth + 1])
                raise ConfigError(f"is not a mapping, so {dotted} cannot be set", at)
            node[part] = copy = dict(child)  # copied: the caller's mappings stay untouched
            node = copy
        node[leaf] = value
    return merged


# --- building and checking -------------------------------------------------------------


def _build(cls: type[_S], raw: object, path: str, **fixed: object) -> _S:
    """`cls` from a YAML mapping at dotted `path`. Every bad value is reported at once;
    rules across fields are checked only once each field is good."""
    if raw is None:  # `audio:` with nothing under it
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"must be a mapping of settings, got {show(raw)}", path)
    known = {f.name: f for f in dataclasses.fields(cls) if rules_of(f).in_yaml}
    hints = get_type_hints(cls)
    problems = [_unknown(path, key, list(known)) for key in raw if key not in known]
    kwargs: dict[str, object] = dict(fixed)
    for name, value in raw.items():
        if name in known:
            try:
                kwargs[name] = _from_yaml(known[name], hints[name], value, join(path, name))
            except ConfigError as err:
                problems.append(err)
    if problems:
        raise combine(problems)
    try:
        return cls(**kwargs)
    except ConfigError as err:
        raise _under(err, path) from None


def _from_yaml(f: dataclasses.Field[Any], hint: Any, value: object, path: str) -> object:
    kind = non_none(hint)
    if value is None and kind is not hint:
        return None
    if is_section(kind):
        return _build(kind, value, path)
    if get_origin(kind) is Mapping and is_section(get_args(kind)[1]):
        return _build_named(get_args(kind)[1], value, path)
    rules = rules_of(f)
    try:
        clean = coerce(hint, value, rules)
    except Invalid as err:
        raise ConfigError(str(err), path) from None
    if rules.must_exist:
        _check_file(clean, path)
    return clean


def _build_named(cls: type[_S], raw: object, path: str) -> dict[str, _S]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"must be a mapping of name: settings, got {show(raw)}", path)
    built: dict[str, _S] = {}
    problems: list[ConfigError] = []
    for name, item in raw.items():
        try:
            if not isinstance(name, str) or not name.strip():
                raise ConfigError("a name must be non-empty text", join(path, str(name)))
            built[name] = _build(cls, item, join(path, name), name=name)
        except ConfigError as err:
            problems.append(err)
    if problems:
        raise combine(problems)
    return built


def _check_file(file: object, path: str) -> None:
    if not isinstance(file, Path):
        return
    if not file.is_file():
        reason = "is a directory" if file.is_dir() else "does not exist"
        raise ConfigError(f"{file} {reason}", path)
    if not os.access(file, os.R_OK):
        raise ConfigError(f"{file} is not readable by this user", path)


def _keys_of(cls: type[Checked], prefix: str) -> Iterator[str]:
    for f in dataclasses.fields(cls):
        if not rules_of(f).in_yaml:
            continue
        key = join(prefix, f.name)
        yield key
        kind = non_none(get_type_hints(cls)[f.name])
        if is_section(kind):
            yield from _keys_of(kind, key)
        elif get_origin(kind) is Mapping:
            yield f"{key}.*"
            if is_section(get_args(kind)[1]):
                yield from _keys_of(get_args(kind)[1], f"{key}.*")


def _unknown(path: str, key: object, known: list[str]) -> ConfigError:
    dotted = join(path, str(key))
    if dotted in _REFUSED_KEYS:
        return ConfigError(_REFUSED_KEYS[dotted], dotted)
    close = closest(str(key), known)
    if close:
        return ConfigError(f'unknown setting; did you mean "{join(path, close)}"?', dotted)
    return ConfigError(f"unknown setting; valid here: {', '.join(known)}", dotted)


def _under(err: ConfigError, prefix: str) -> ConfigError:
    """`err` from a nested settings class, with keys made relative to the whole file."""
    if not prefix:
        return err
    return combine([ConfigError(p.reason, join(prefix, p.key or "")) for p in err.problems])
