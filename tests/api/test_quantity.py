"""Edge cases of the strict Kubernetes quantity parser (apimachinery ``ParseQuantity``)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from scheduler_core.api.quantity import (
    MAX_INT64,
    MIN_INT64,
    QuantityError,
    milli_value,
    parse_amount,
    parse_quantity,
    value,
)

# (input, exact value) — accepted forms, including apimachinery's own "troll" cases.
ACCEPTED: list[tuple[str, Decimal]] = [
    ("0", Decimal(0)),
    ("100m", Decimal("0.1")),
    ("1", Decimal(1)),
    ("1.5", Decimal("1.5")),
    ("1Gi", Decimal(2**30)),
    ("1G", Decimal(10**9)),
    ("1Ki", Decimal(1024)),
    ("500Ki", Decimal(512000)),
    ("7Mi", Decimal(7 * 2**20)),
    ("5Ti", Decimal(5 * 2**40)),
    ("4Pi", Decimal(4 * 2**50)),
    ("3Ei", Decimal(3 * 2**60)),
    ("0.5Gi", Decimal(2**29)),
    ("100.035Ki", Decimal("102435.84")),
    ("1k", Decimal(1000)),
    ("8k", Decimal(8000)),
    ("7M", Decimal(7 * 10**6)),
    ("5T", Decimal(5 * 10**12)),
    ("2P", Decimal(2 * 10**15)),
    ("1E", Decimal(10**18)),
    ("12E", Decimal(12 * 10**18)),  # DecimalSI is NOT capped at 2^63-1
    ("1e3", Decimal(1000)),
    ("1E3", Decimal(1000)),
    ("1E-3", Decimal("0.001")),
    ("1e+3", Decimal(1000)),
    ("1.3E+6", Decimal(1300000)),
    ("0.5e-1", Decimal("0.05")),
    ("+1", Decimal(1)),
    ("-1", Decimal(-1)),
    ("-1.5Gi", Decimal(-(3 * 2**29))),
    (".5", Decimal("0.5")),
    ("5.", Decimal(5)),
    ("1.", Decimal(1)),
    ("1.G", Decimal(10**9)),
    (".001", Decimal("0.001")),
    ("1n", Decimal("1e-9")),
    ("5n", Decimal("5e-9")),
    ("1u", Decimal("1e-6")),
    ("4u", Decimal("4e-6")),
    ("0001", Decimal(1)),
    ("1e0000003", Decimal(1000)),
]

# (input, value after apimachinery's nano round-up / BinarySI cap)
ROUNDED: list[tuple[str, Decimal]] = [
    ("0.9n", Decimal("1e-9")),  # finer than nano rounds up
    ("3.001n", Decimal("4e-9")),
    ("1.1E-9", Decimal("2e-9")),
    ("0.0000000001", Decimal("1e-9")),
    ("0.5e-9", Decimal("1e-9")),
    ("0.00000012345", Decimal("124e-9")),
    ("0.000000000001Ki", Decimal("2e-9")),
    ("-0.9n", Decimal("-1e-9")),  # away from zero for negatives
    ("9Ei", Decimal(MAX_INT64)),  # BinarySI capped at 2^63-1
    ("9223372036854775807Ki", Decimal(MAX_INT64)),
    ("-9Ei", Decimal(-MAX_INT64)),
    ("0n", Decimal(0)),
]

REJECTED: list[str] = [
    "",
    " 1",  # no whitespace, leading
    "1 ",  # ... or trailing
    "1\n",  # a trailing newline is not whitespace-tolerant either
    "1K",  # capital K is not a suffix
    "1_000",
    "NaN",
    "nan",
    "Inf",
    "-inf",
    "1.2.3",
    "1.1.M",
    "1Gib",
    "1i",
    ".5i",
    "0.1mi",
    "0.1am",
    "aoeu",
    "1+1.0M",
    "e3",  # a number needs digits (the BNF; the Go scanner would read 0)
    ".",
    "+",
    "-",
    "+Ki",
    "1e",
    "-3.01e-",
    "1Ee3",
    "1e3.5",
    "1E3i",
    "--1",
    "+-1",
    "1m3",
    "1ki",
    "0x10",
    "١",  # a non-ASCII digit
    "1e99999999999",  # exponent beyond int32
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED, ids=[c[0] or "<empty>" for c in ACCEPTED])
def test_accepts_every_form_of_the_grammar(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(("text", "expected"), ROUNDED, ids=[c[0] for c in ROUNDED])
def test_rounds_up_to_nano_and_caps_binary_si(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", REJECTED, ids=[repr(t) for t in REJECTED])
def test_rejects_what_the_api_server_would(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_edge_case_table_is_at_least_36_cases() -> None:
    assert len(ACCEPTED) + len(ROUNDED) + len(REJECTED) >= 36


def test_negative_zero_is_plain_zero() -> None:
    parsed = parse_quantity("-0")
    assert parsed == 0
    assert not parsed.is_signed()


def test_huge_exponent_within_int32_parses_without_materialising() -> None:
    parsed = parse_quantity("1e2147483647")
    assert value(parsed) == MAX_INT64
    assert milli_value(parsed) == MAX_INT64


def test_huge_negative_exponent_rounds_to_one_nano() -> None:
    assert parse_quantity("1e-2147483648") == Decimal("1e-9")


# --- error messages -------------------------------------------------------------------


def test_error_names_location_and_string() -> None:
    where = "Pod default/x: spec.containers[0].resources.requests.cpu"
    with pytest.raises(QuantityError) as info:
        parse_quantity("1.2.3", where)
    assert str(info.value) == f'{where}: invalid quantity "1.2.3"'
    assert info.value.value == "1.2.3"
    assert info.value.where == where


def test_error_without_location_names_only_the_string() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity("1K")
    assert str(info.value) == 'invalid quantity "1K"'


def test_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_quantity("bad")


def test_error_escapes_control_characters() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity("1\n")
    assert str(info.value) == 'invalid quantity "1\\n"'


# --- YAML scalars ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (2, Decimal(2)),
        (0, Decimal(0)),
        (-3, Decimal(-3)),
        (0.5, Decimal("0.5")),
        (0.1, Decimal("0.1")),  # through its decimal text, not the binary float
        (2.0, Decimal(2)),
        (1e-10, Decimal("1e-9")),  # rounded up to nano like any quantity
        (1e20, Decimal(10**20)),
    ],
)
def test_accepts_yaml_ints_and_floats(raw: int | float, expected: Decimal) -> None:
    assert parse_quantity(raw) == expected


@pytest.mark.parametrize("raw", [float("nan"), float("inf"), float("-inf"), True, False])
def test_rejects_non_finite_floats_and_booleans(raw: float) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(raw)


def test_rejects_other_types_with_location() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity([1], "Queue q: spec.capability.cpu")  # type: ignore[arg-type]
    assert "Queue q: spec.capability.cpu" in str(info.value)


def test_repeated_strings_give_the_same_value() -> None:
    first = parse_quantity("250m")
    second = parse_quantity("250m")
    assert first == second == Decimal("0.25")


# --- Value() / MilliValue() -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", 1),
        ("1", 1),
        ("1.5", 2),
        ("1.0001", 2),
        ("1Gi", 2**30),
        ("1G", 10**9),
        ("0", 0),
        ("1n", 1),
        ("-100m", -1),  # away from zero, as apimachinery's scaledValue
        ("-1.5", -2),
        ("12E", MAX_INT64),  # Go overflows (undefined); we saturate
        ("-12E", MIN_INT64),
    ],
)
def test_value_rounds_away_from_zero(text: str, expected: int) -> None:
    assert value(parse_quantity(text)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 1000),
        ("100m", 100),
        ("0.0001", 1),
        ("1n", 1),
        ("1.0005", 1001),
        ("2Gi", 2 * 2**30 * 1000),
        ("0", 0),
        ("-0.0001", -1),
        ("9Ei", MAX_INT64),
    ],
)
def test_milli_value_rounds_away_from_zero(text: str, expected: int) -> None:
    assert milli_value(parse_quantity(text)) == expected


@pytest.mark.parametrize("raw", ["-1", "-100", "-0.001", "-1Gi", "-1e3", -5, -0.5])
def test_an_amount_refuses_a_negative_quantity_naming_where(raw: str | float) -> None:
    with pytest.raises(QuantityError, match="must not be negative") as info:
        parse_amount(raw, "Pod ns/p: spec.containers[0].resources.requests.nvidia.com/gpu")
    assert "requests.nvidia.com/gpu" in str(info.value)


@pytest.mark.parametrize("raw", ["0", "-0", "1", "100m", "1Gi", 0, 2.5])
def test_an_amount_accepts_zero_and_positive_quantities(raw: str | float) -> None:
    assert parse_amount(raw) == parse_quantity(raw)
