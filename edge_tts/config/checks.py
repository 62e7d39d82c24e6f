"""The checking machinery behind the settings classes: field rules, strict coercion and
error messages that name the dotted key. No setting is defined here (see `sections`)."""

from __future__ import annotations

import dataclasses
import difflib
import math
import reprlib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard, TypeVar, Union, get_args, get_origin, get_type_hints

_T = TypeVar("_T")
Check = Callable[[Any], Any]  # takes a value of the field's type, returns it normalized


class ConfigError(ValueError):
    """A setting is unknown, missing or wrong. str(err) is written for the user.

    `key` is the dotted path of the (first) bad setting; `problems` holds one error per
    bad setting when several were found at once.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key or None
        self.reason = message
        self.problems: tuple[ConfigError, ...] = (self,)


class Invalid(ValueError):
    """A value is wrong; the caller knows which key it belongs to."""


# --- field rules -----------------------------------------------------------------------


@dataclass(frozen=True)
class Rules:
    checks: tuple[Check, ...] = ()
    int_as_str: bool = False  # YAML reads `device: 2` or `protocol: 5` as a number
    must_exist: bool = False  # a file checked when loading, so a typo fails at start
    in_yaml: bool = True  # False: not a key of its own (a voice's name is its mapping key)


_RULES = "edge_tts.rules"
_NO_RULES = Rules()


def meta(
    *checks: Check, int_as_str: bool = False, must_exist: bool = False, in_yaml: bool = True
) -> dict[str, Rules]:
    return {_RULES: Rules(checks, int_as_str, must_exist, in_yaml)}


FILE = meta(must_exist=True)


def setting(default: _T, *checks: Check, int_as_str: bool = False) -> _T:
    return field(default=default, metadata=meta(*checks, int_as_str=int_as_str))


def rules_of(f: dataclasses.Field[Any]) -> Rules:
    rules = f.metadata.get(_RULES)
    return rules if isinstance(rules, Rules) else _NO_RULES


def between(lo: float, hi: float | None = None) -> Check:
    def check(value: float) -> float:
        if value < lo or (hi is not None and value > hi):
            bounds = (
                f"between {_num(lo)} and {_num(hi)}" if hi is not None else f"at least {_num(lo)}"
            )
            raise Invalid(f"must be {bounds}, got {_num(value)}")
        return value

    return check


def one_of(*choices: str, fold_case: bool = False) -> Check:
    def check(value: str) -> str:
        key = value.upper() if fold_case else value
        if key in choices:
            return key
        raise Invalid(
            f"must be one of {', '.join(choices)}, got {value!r}{did_you_mean(key, choices)}"
        )

    return check


# --- the base of every settings class --------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """Base of every settings class: fields are checked however the object was made."""

    def __post_init__(self) -> None:
        _check_fields(self)
        self._check_together()

    def _check_together(self) -> None:
        """Rules that span fields; each field is already known good here."""


def _check_fields(obj: Checked) -> None:
    hints = get_type_hints(type(obj))
    problems: list[ConfigError] = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        try:
            clean = coerce(hints[f.name], value, rules_of(f))
        except Invalid as err:
            problems.append(ConfigError(str(err), f.name))
            continue
        if clean is not value:
            object.__setattr__(obj, f.name, clean)
    if problems:
        raise combine(problems)


def coerce(hint: Any, value: object, rules: Rules) -> object:
    kind = non_none(hint)
    if value is None and kind is not hint:
        return None
    if is_section(kind):
        if not isinstance(value, kind):
            raise Invalid(f"must be {kind.__name__}, got {show(value)}")
        return value
    if get_origin(kind) is Mapping:
        return _frozen_mapping(get_args(kind)[1], value)
    clean = _texts(value) if get_origin(kind) is tuple else _SCALARS[kind](value, rules)
    for check in rules.checks:
        clean = check(clean)
    return clean


def _frozen_mapping(kind: type, value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise Invalid(f"must be a mapping of name: settings, got {show(value)}")
    for name, item in value.items():
        if not isinstance(name, str) or not name.strip():
            raise Invalid(f"names must be non-empty text, got {show(name)}")
        if not isinstance(item, kind):
            raise Invalid(f"{name} must be {kind.__name__}, got {show(item)}")
    return types.MappingProxyType(dict(value))


def _texts(value: object) -> tuple[str, ...]:
    """A list of texts (`tuple[str, ...]` fields): frozen, each item non-empty text."""
    if not isinstance(value, list | tuple):
        raise Invalid(f"must be a list of texts, got {show(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise Invalid(f"item {index + 1} must be non-empty text, got {show(item)}")
    return tuple(value)


# --- scalar types ----------------------------------------------------------------------
# Strict on purpose: a bool is not a number and a number is not text, so `threads: yes`
# or `volume: "loud"` fail at start instead of meaning something surprising later.


def _as_bool(value: object, _rules: Rules) -> bool:
    if isinstance(value, bool):
        return value
    raise Invalid(f"must be true or false, got {show(value)}")


def _as_int(value: object, _rules: Rules) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise Invalid(f"must be a whole number, got {show(value)}")


def _as_float(value: object, _rules: Rules) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise Invalid(f"must be a number, got {show(value)}")


def _as_str(value: object, rules: Rules) -> str:
    if rules.int_as_str and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, str):
        raise Invalid("must not be empty")
    hint = f' (quote it: "{value}")' if isinstance(value, int | float | bool) else ""
    raise Invalid(f"must be text, got {show(value)}{hint}")


def _as_path(value: object, _rules: Rules) -> Path:
    if isinstance(value, Path):
        return value.expanduser()
    if isinstance(value, str) and value.strip():
        return Path(value).expanduser()
    raise Invalid(f"must be a path, got {show(value)}")


_SCALARS: dict[object, Callable[[object, Rules], object]] = {
    bool: _as_bool,
    int: _as_int,
    float: _as_float,
    str: _as_str,
    Path: _as_path,
}


# --- small helpers ---------------------------------------------------------------------


def is_section(kind: object) -> TypeGuard[type[Checked]]:
    return isinstance(kind, type) and issubclass(kind, Checked)


def non_none(hint: Any) -> Any:
    """`X` for `X | None`, else the hint itself."""
    if get_origin(hint) in (Union, types.UnionType):
        (kind,) = [arg for arg in get_args(hint) if arg is not type(None)]
        return kind
    return hint


def closest(value: str, choices: list[str] | tuple[str, ...]) -> str | None:
    close = difflib.get_close_matches(value, choices, n=1)
    # difflib misses abbreviations such as `ca` for `ca_file`.
    close += [choice for choice in choices if value and choice.startswith(value)]
    return close[0] if close else None


def did_you_mean(value: str, choices: list[str] | tuple[str, ...]) -> str:
    close = closest(value, choices)
    return f'; did you mean "{close}"?' if close else ""


def combine(errors: list[ConfigError]) -> ConfigError:
    problems = [p for err in errors for p in err.problems]
    if len(problems) == 1:
        return problems[0]
    combined = ConfigError(f"{len(problems)} problems:" + "".join(f"\n  {p}" for p in problems))
    combined.key = problems[0].key
    combined.problems = tuple(problems)
    return combined


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path and name else path or name


def show(value: object) -> str:
    kinds: dict[type, str] = {
        bool: "a boolean",
        int: "a whole number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "a mapping",
    }
    if value is None:
        return "nothing (null)"
    return f"{reprlib.repr(value)} ({kinds.get(type(value), type(value).__name__)})"


def _num(value: float | None) -> str:
    return str(int(value)) if value is not None and float(value).is_integer() else str(value)
