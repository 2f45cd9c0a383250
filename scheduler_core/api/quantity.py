"""Strict Kubernetes quantity parsing (apimachinery's ``resource.Quantity`` grammar).

Why a parser of our own: the Python Kubernetes clients accept strings the API server
rejects (``1K``, ``NaN``, ``" 1"``, ``1_000``) and skip apimachinery's nano round-up and
BinarySI cap, so a demo YAML or a config file could silently diverge from what a real
cluster would do. Values are exact ``Decimal`` s; ``milli_value`` / ``value`` reproduce
``Quantity.MilliValue()`` / ``Quantity.Value()`` which Volcano feeds into ``Resource``.

Grammar (apimachinery ``quantity.go``)::

    <quantity>        ::= <signedNumber><suffix>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

Deliberate differences from the Go scanner, all on degenerate input:
* a number without any digit (``"."``, ``"+"``, ``"e3"``, ``"-.Ki"``) is rejected; the Go
  scanner reads it as 0 although its own grammar excludes it;
* a decimal exponent outside the int32 range is rejected; Go silently wraps it to int32.
"""

from __future__ import annotations

import functools
import json
import re
from decimal import (
    MAX_EMAX,
    MAX_PREC,
    MIN_EMIN,
    ROUND_UP,
    Context,
    Decimal,
)

__all__ = [
    "MAX_INT64",
    "MIN_INT64",
    "QuantityError",
    "milli_value",
    "parse_amount",
    "parse_quantity",
    "value",
]

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1

# Exact arithmetic for any input length: precision is only a ceiling, never reached by
# the few digits a quantity carries, and the exponent range covers every int32 exponent.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, rounding=ROUND_UP)

_NANO = Decimal("1e-9")
_MAX_ALLOWED = Decimal(MAX_INT64)

# [0-9] rather than \d: \d would accept non-ASCII digits the Go scanner rejects.
_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)"
    r"(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?"
)

_DECIMAL_SI_EXPONENT: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}

_BINARY_SI_MULTIPLIER: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


class QuantityError(ValueError):
    """A quantity string the API server would refuse; names where it was found."""

    def __init__(self, value: str, where: str = "", reason: str = "") -> None:
        self.value = value
        self.where = where
        quoted = json.dumps(value, ensure_ascii=False)
        prefix = f"{where}: " if where else ""
        suffix = f": {reason}" if reason else ""
        super().__init__(f"{prefix}invalid quantity {quoted}{suffix}")


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal | None:
    """Parse one canonical-or-not quantity string; ``None`` means invalid.

    Cached because a cluster reuses a handful of strings ("100m", "1Gi") across
    thousands of pods; invalid results are cached too so a bad manifest re-listed by
    an informer costs nothing extra.
    """
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        return None
    sign, number, suffix = match.group("sign", "number", "suffix")
    suffix = suffix or ""
    amount = Decimal(number)
    binary = False
    if suffix in _DECIMAL_SI_EXPONENT:
        exponent = _DECIMAL_SI_EXPONENT[suffix]
        if exponent:
            amount = amount.scaleb(exponent, _EXACT)
    elif suffix in _BINARY_SI_MULTIPLIER:
        binary = True
        amount = _EXACT.multiply(amount, _BINARY_SI_MULTIPLIER[suffix])
    else:
        digits = suffix[1:].lstrip("+-").lstrip("0")
        if len(digits) > 10:  # beyond int32 for sure; also keeps int() off huge strings
            return None
        exponent = int(suffix[1:])
        if not _INT32_MIN <= exponent <= _INT32_MAX:
            return None
        amount = amount.scaleb(exponent, _EXACT)

    # apimachinery keeps at most nano precision and rounds a finer non-zero value away
    # from zero ("if you want some resources, you should get some resources").
    exponent_now = amount.as_tuple().exponent
    if amount and isinstance(exponent_now, int) and exponent_now < -9:
        amount = amount.quantize(_NANO, rounding=ROUND_UP, context=_EXACT)
    # Only BinarySI quantities are capped, silently, at 2^63-1 (in base units).
    if binary and amount > _MAX_ALLOWED:
        amount = _MAX_ALLOWED
    if sign == "-" and amount:
        amount = -amount
    return amount


def parse_quantity(value: object, where: str = "") -> Decimal:
    """Parse a Kubernetes quantity exactly as the API server would.

    ``value`` may be an int or float because YAML hands ``cpu: 2`` or ``cpu: 0.5`` over
    unquoted; they are read through their decimal text, as apimachinery reads a JSON
    number. ``where`` (e.g. ``"Pod default/x: spec.containers[0].resources.requests.cpu"``)
    is put in the error so a bad manifest can be found.
    """
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        raise QuantityError(str(value).lower(), where)
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)  # "nan"/"inf" fail the grammar below, as they should
    else:
        raise QuantityError(repr(value), where)
    parsed = _parse_text(text)
    if parsed is None:
        raise QuantityError(text, where)
    return parsed


def parse_amount(value: object, where: str = "") -> Decimal:
    """``parse_quantity`` for an amount of a resource (a request, a limit, an allocatable,
    a queue's capability): the API server refuses a negative one on a pod ("must be greater
    than or equal to 0") and nothing can hold less than nothing, yet a negative amount added
    to a queue's allocation would lower it and let a pod the queue refused pass. Raises
    ``QuantityError`` naming ``where``."""
    amount = parse_quantity(value, where)
    if amount < 0:
        raise QuantityError(str(value), where, "must not be negative")
    return amount


def _round_away_from_zero(amount: Decimal) -> int:
    """Integer rounding of apimachinery's ``ScaledValue``: away from zero.

    Go leaves int64 overflow undefined; we saturate so that huge (but grammatical)
    quantities stay finite when Volcano-style code turns them into float64.
    ``value``/``milli_value`` are cached for the same reason as parsing: few distinct
    quantities, converted once per pod and container.
    """
    if amount >= MAX_INT64:
        return MAX_INT64
    if amount <= MIN_INT64:
        return MIN_INT64
    return int(amount.to_integral_value(rounding=ROUND_UP, context=_EXACT))


@functools.lru_cache(maxsize=4096)
def value(q: Decimal) -> int:
    """``Quantity.Value()``: whole units, rounded away from zero (``"100m"`` -> 1)."""
    return _round_away_from_zero(q)


@functools.lru_cache(maxsize=4096)
def milli_value(q: Decimal) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded away from zero (``"0.0001"`` -> 1)."""
    return _round_away_from_zero(q.scaleb(3, _EXACT))
