"""One checked value of a source file's row (number as stated, text, date, link): the value, or one
InputError naming file, field (``rows[3].metrics.tput_per_gpu``) and problem."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rackbook.core import schema
from rackbook.errors import InputError


def number(
    path: Path, field: str, value: Any, *, integer: bool = False, positive: bool = True
) -> float:
    """``value`` as a finite number (> 0 when ``positive``, else >= 0; whole when ``integer``)."""
    if value is None:
        raise InputError(path, field, "missing")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(path, field, f"not a number ({value!r})")
    if not math.isfinite(value):
        raise InputError(path, field, "non-finite value (NaN or infinite)")
    if integer and float(value) % 1 != 0:
        raise InputError(path, field, f"not an integer ({value!r})")
    if positive and value <= 0:
        raise InputError(path, field, f"must be > 0, got {value!r}")
    if not positive and value < 0:
        raise InputError(path, field, f"must be >= 0, got {value!r}")
    return float(value)


def optional_number(
    path: Path, where: str, obj: Mapping[str, Any], key: str, *, positive: bool = True
) -> float | None:
    """``obj[key]`` (field ``where.key``) checked as :func:`number`, or None when absent or null."""
    value = obj.get(key)
    return None if value is None else number(path, f"{where}.{key}", value, positive=positive)


def text(path: Path, field: str, value: Any, *, optional: bool = False) -> str | None:
    """A non-empty string (None when absent and ``optional``)."""
    if value is None and optional:
        return None
    if value is None:
        raise InputError(path, field, "missing")
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, field, f"must be a non-empty string, got {value!r}")
    return value


def date(path: Path, field: str, value: Any, *, optional: bool = False) -> str | None:
    """A text that is a date ``YYYY-MM-DD`` (None when absent and ``optional``)."""
    given = text(path, field, value, optional=optional)
    if given is not None and not schema.is_date(given):
        raise InputError(path, field, f"{given!r} is not a date YYYY-MM-DD")
    return given


def url(path: Path, field: str, value: Any, *, optional: bool = False) -> str | None:
    """A text that is an http(s) link (None when absent and ``optional``)."""
    given = text(path, field, value, optional=optional)
    if given is not None and not schema.URL.match(given):
        raise InputError(path, field, f"{given!r} is not an http(s) link")
    return given


def mapping(path: Path, field: str, value: Any) -> dict[str, Any]:
    """An object (a JSON or JavaScript ``{...}``); absent is ``missing``."""
    if not isinstance(value, dict):
        raise InputError(path, field, "missing" if value is None else "must be an object")
    return value


def whole(path: Path, field: str, value: Any) -> int:
    """A whole number > 0."""
    return int(number(path, field, value, integer=True))


def optional_int(path: Path, field: str, value: Any, *, required: bool) -> int | None:
    """A whole number > 0, or None when absent and not ``required``."""
    return None if value is None and not required else whole(path, field, value)
