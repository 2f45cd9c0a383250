"""Table tests pinning Volcano's ``api.Resource`` semantics, one case per behaviour."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from scheduler_core.api.quantity import QuantityError
from scheduler_core.api.resource import (
    IGNORED_SCALARS,
    INFINITY,
    MIN_RESOURCE,
    ZERO,
    DimensionDefault,
    Resource,
    ResourceError,
    exceeded_part,
    intersection,
    intersection_with_ignored_scalar_resources,
    is_scalar_resource_name,
    res_max,
    res_min,
    share,
)

GPU = "nvidia.com/gpu"
FOO = "example.com/foo"


def R(
    cpu: float = 0.0,
    mem: float = 0.0,
    scalars: dict[str, float] | None = None,
    pods: int = 0,
) -> Resource:
    """Short constructor so the tables read like Volcano's test fixtures."""
    return Resource(cpu, mem, None if scalars is None else dict(scalars), pods)


def same(a: Resource, b: Resource) -> bool:
    return a.semantic_equal(b)


def case(name: str, *values: Any) -> Any:
    return pytest.param(*values, id=name)


# --- constants and construction -------------------------------------------------------


def test_constants_match_volcano() -> None:
    assert MIN_RESOURCE == 0.1
    assert int(ZERO) == 0 and int(INFINITY) == -1
    assert DimensionDefault.ZERO is ZERO and DimensionDefault.INFINITY is INFINITY
    assert frozenset({"pods"}) == IGNORED_SCALARS


def test_empty_has_no_scalar_map() -> None:
    empty = Resource.empty()
    assert (empty.milli_cpu, empty.memory, empty.scalars, empty.max_task_num) == (0, 0, None, 0)


def test_infinite_is_max_float_and_max_int_without_scalars() -> None:
    inf = Resource.infinite()
    assert inf.milli_cpu == inf.memory == 1.7976931348623157e308
    assert inf.max_task_num == 2**63 - 1
    assert inf.scalars is None


def test_resource_has_slots_only() -> None:
    with pytest.raises(AttributeError):
        R().extra = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("rl", "expected"),
    [
        case("cpu-cores-to-milli", {"cpu": "1"}, R(1000)),
        case("cpu-milli", {"cpu": "100m"}, R(100)),
        case("cpu-sub-milli-rounds-up", {"cpu": "1.5m"}, R(2)),
        case("cpu-yaml-int", {"cpu": 2}, R(2000)),
        case("cpu-yaml-float", {"cpu": 0.5}, R(500)),
        case("memory-binary-bytes", {"memory": "1Gi"}, R(0, 2**30)),
        case("memory-decimal-bytes", {"memory": "1G"}, R(0, 1e9)),
        case("memory-fraction-rounds-up", {"memory": "100m"}, R(0, 1)),
        case("pods-whole-units-and-max-task-num", {"pods": "110"}, R(0, 0, {"pods": 110}, 110)),
        case(
            "ephemeral-storage-milli",
            {"ephemeral-storage": "1Ki"},
            R(0, 0, {"ephemeral-storage": 1024000}),
        ),
        case("extended-resource-milli", {GPU: "2"}, R(0, 0, {GPU: 2000})),
        case(
            "hugepages-milli",
            {"hugepages-2Mi": "4Mi"},
            R(0, 0, {"hugepages-2Mi": 4 * 2**20 * 1000}),
        ),
        case(
            "attachable-volumes-milli",
            {"attachable-volumes-aws-ebs": "39"},
            R(0, 0, {"attachable-volumes-aws-ebs": 39000}),
        ),
        case(
            "prefixed-native-kept",
            {"example.kubernetes.io/foo": "1"},
            R(0, 0, {"example.kubernetes.io/foo": 1000}),
        ),
        case("count-quota-ignored", {"count/pods": "10", "count/example.com/foo": "3"}, R()),
        case("bare-unknown-name-dropped", {"rdma": "1"}, R()),
        case("requests-prefixed-dropped", {"requests.nvidia.com/gpu": "1"}, R()),
        case("two-slashes-dropped", {"a.com/b/c": "1"}, R()),
        case("uppercase-domain-dropped", {"Example.com/gpu": "1"}, R()),
        case("name-part-must-start-alnum", {"example.com/-gpu": "1"}, R()),
        case("name-part-over-63-dropped", {"example.com/" + "a" * 64: "1"}, R()),
        case(
            "name-part-63-kept",
            {"example.com/" + "a" * 63: "1"},
            R(0, 0, {"example.com/" + "a" * 63: 1000}),
        ),
        case(
            "all-together",
            {"cpu": "2", "memory": "4Gi", GPU: "1", "pods": "1"},
            R(2000, 4 * 2**30, {GPU: 1000, "pods": 1}, 1),
        ),
        case("none-is-empty", None, R()),
        case("empty-is-empty", {}, R()),
    ],
)
def test_from_resource_list(rl: Mapping[str, str | int | float] | None, expected: Resource) -> None:
    got = Resource.from_resource_list(rl)
    assert same(got, expected), repr(got)


def test_from_resource_list_keeps_no_scalar_map_for_cpu_memory_only() -> None:
    assert Resource.from_resource_list({"cpu": "1", "memory": "1Gi"}).scalars is None


def test_from_resource_list_error_names_where_and_resource() -> None:
    where = "Pod default/x: spec.containers[0].resources.requests"
    with pytest.raises(QuantityError) as info:
        Resource.from_resource_list({"cpu": "1.2.3"}, where)
    assert str(info.value) == f'{where}.cpu: invalid quantity "1.2.3"'


def test_from_resource_list_error_without_where_names_resource() -> None:
    with pytest.raises(QuantityError) as info:
        Resource.from_resource_list({GPU: "1K"})
    assert str(info.value) == f'{GPU}: invalid quantity "1K"'


def test_from_resource_list_validates_even_dropped_names() -> None:
    with pytest.raises(QuantityError):
        Resource.from_resource_list({"rdma": "lots"})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        case("extended", GPU, True),
        case("hugepages", "hugepages-1Gi", True),
        case("attachable-volumes", "attachable-volumes-csi-x", True),
        case("kubernetes-io-prefixed", "kubernetes.io/foo", True),
        case("sub-kubernetes-io-prefixed", "foo.kubernetes.io/bar", True),
        case("cpu-is-native", "cpu", False),
        case("ephemeral-storage-is-native", "ephemeral-storage", False),
        case("bare-name", "rdma", False),
        case("requests-prefix", "requests.example.com/foo", False),
        case("empty-name-part", "example.com/", False),
        case("empty-prefix", "/foo", False),
        case("underscore-in-domain", "ex_ample.com/foo", False),
        case("dots-and-dashes-in-name", "example.com/a-b.c_d", True),
    ],
)
def test_is_scalar_resource_name(name: str, expected: bool) -> None:
    assert is_scalar_resource_name(name) is expected


# --- clone / add / sub / multi / scalars ----------------------------------------------


def test_clone_is_deep_and_keeps_none_map() -> None:
    original = R(1, 2, {GPU: 3}, 4)
    copy = original.clone()
    copy.scalars[GPU] = 99  # type: ignore[index]
    copy.milli_cpu = 7
    assert same(original, R(1, 2, {GPU: 3}, 4))
    assert R().clone().scalars is None


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("element-wise", R(1, 2, {GPU: 3}), R(10, 20, {GPU: 30}), R(11, 22, {GPU: 33})),
        case("creates-keys-only-in-rr", R(1, 2), R(0, 0, {GPU: 5}), R(1, 2, {GPU: 5})),
        case("keeps-keys-only-in-self", R(0, 0, {GPU: 5}), R(1, 1), R(1, 1, {GPU: 5})),
        case("max-task-num-not-added", R(0, 0, None, 3), R(0, 0, None, 4), R(0, 0, None, 3)),
    ],
)
def test_add(left: Resource, right: Resource, expected: Resource) -> None:
    assert left.add(right) is left
    assert same(left, expected)


def test_add_of_empty_scalar_map_creates_no_map() -> None:
    left = R(1)
    left.add(R(0, 0, {}))
    assert left.scalars is None


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("element-wise", R(10, 20, {GPU: 30}), R(1, 2, {GPU: 3}), R(9, 18, {GPU: 27})),
        case("within-epsilon-allowed", R(1000, 0), R(1000.0625, 0), R(-0.0625, 0)),
        case("nil-left-map-skips-rr-scalars", R(10, 10), R(1, 1, {GPU: 0.05}), R(9, 9)),
        case(
            "missing-key-becomes-negative",
            R(10, 10, {FOO: 1}),
            R(0, 0, {GPU: 0.05}),
            R(10, 10, {FOO: 1, GPU: -0.05}),
        ),
        case(
            "empty-left-map-still-subtracts",
            R(1, 1, {}),
            R(0, 0, {GPU: 0.05}),
            R(1, 1, {GPU: -0.05}),
        ),
    ],
)
def test_sub(left: Resource, right: Resource, expected: Resource) -> None:
    assert left.sub(right) is left
    assert same(left, expected), repr(left)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        case("more-cpu", R(1000), R(1001)),
        case("more-memory", R(0, 10), R(0, 11)),
        case("scalar-missing-on-left-reads-zero", R(10, 10, {FOO: 1}), R(0, 0, {GPU: 1})),
        case("scalar-larger", R(0, 0, {GPU: 1000}), R(0, 0, {GPU: 2000})),
    ],
)
def test_sub_refuses_larger_and_leaves_self_untouched(left: Resource, right: Resource) -> None:
    before = left.clone()
    with pytest.raises(ResourceError, match="not sufficient"):
        left.sub(right)
    assert same(left, before)


def test_sub_nil_left_map_still_asserts_on_scalars() -> None:
    with pytest.raises(ResourceError):
        R(10, 10).sub(R(0, 0, {GPU: 1000}))


def test_sub_without_assert_goes_negative_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    left = R(1, 0, {GPU: 0})
    with caplog.at_level(logging.ERROR, logger="scheduler_core.api.resource"):
        left.sub_without_assert(R(5, 0, {GPU: 2000}))
    assert same(left, R(-4, 0, {GPU: -2000}))
    assert "['cpu', 'nvidia.com/gpu']" in caplog.text


def test_sub_without_assert_is_silent_when_sufficient(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="scheduler_core.api.resource"):
        R(5).sub_without_assert(R(1))
    assert caplog.text == ""


def test_multi_scales_scalars_but_not_max_task_num() -> None:
    res = R(10, 20, {GPU: 30}, 4)
    assert res.multi(0.5) is res
    assert same(res, R(5, 10, {GPU: 15}, 4))


@pytest.mark.parametrize(
    ("start", "op", "expected"),
    [
        case("add-scalar-creates-map", R(), lambda r: r.add_scalar(GPU, 1), R(0, 0, {GPU: 1})),
        case(
            "add-scalar-accumulates",
            R(0, 0, {GPU: 1}),
            lambda r: r.add_scalar(GPU, 2),
            R(0, 0, {GPU: 3}),
        ),
        case("set-scalar-creates-map", R(), lambda r: r.set_scalar(GPU, 4), R(0, 0, {GPU: 4})),
        case(
            "set-scalar-overwrites",
            R(0, 0, {GPU: 1}),
            lambda r: r.set_scalar(GPU, 0),
            R(0, 0, {GPU: 0}),
        ),
    ],
)
def test_scalar_setters(
    start: Resource, op: Callable[[Resource], None], expected: Resource
) -> None:
    op(start)
    assert same(start, expected)


# --- accessors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("res", "name", "expected"),
    [
        case("cpu", R(5, 6, {GPU: 7}), "cpu", 5),
        case("memory", R(5, 6, {GPU: 7}), "memory", 6),
        case("scalar", R(5, 6, {GPU: 7}), GPU, 7),
        case("missing-scalar-zero", R(5, 6, {GPU: 7}), FOO, 0),
        case("nil-map-zero", R(5, 6), GPU, 0),
    ],
)
def test_get(res: Resource, name: str, expected: float) -> None:
    assert res.get(name) == expected


@pytest.mark.parametrize(
    ("res", "expected"),
    [
        case("all-zero", R(), True),
        case("below-epsilon", R(0.09, 0.09, {GPU: 0.09}), True),
        case("pods-ignored", R(0, 0, {"pods": 5}), True),
        case("cpu-at-epsilon", R(0.1), False),
        case("memory", R(0, 1), False),
        case("scalar-at-epsilon", R(0, 0, {GPU: 0.1}), False),
    ],
)
def test_is_empty(res: Resource, expected: bool) -> None:
    assert res.is_empty() is expected


@pytest.mark.parametrize(
    ("res", "name", "expected"),
    [
        case("cpu-below-epsilon", R(0.09), "cpu", True),
        case("cpu-at-epsilon", R(0.1), "cpu", False),
        case("memory", R(0, 5), "memory", False),
        case("nil-map-any-scalar", R(), GPU, True),
        case("present-scalar", R(0, 0, {GPU: 0.05}), GPU, True),
        case("present-scalar-big", R(0, 0, {GPU: 1}), GPU, False),
    ],
)
def test_is_zero(res: Resource, name: str, expected: bool) -> None:
    assert res.is_zero(name) is expected


def test_is_zero_unknown_scalar_in_map_asserts() -> None:
    with pytest.raises(ResourceError, match="unknown resource"):
        R(0, 0, {GPU: 1}).is_zero(FOO)


@pytest.mark.parametrize(
    ("res", "expected"),
    [
        case("empty", R(), []),
        case("threshold-is-epsilon", R(0.1, 0.09, {GPU: 0.1, FOO: 0.09}), ["cpu", GPU]),
        case(
            "scalars-sorted-after-cpu-memory",
            R(1, 1, {"z.com/a": 1, "a.com/z": 1, "pods": 1}),
            ["cpu", "memory", "a.com/z", "pods", "z.com/a"],
        ),
    ],
)
def test_resource_names(res: Resource, expected: list[str]) -> None:
    assert res.resource_names() == expected


# --- whole-vector comparisons -------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "dv", "expected"),
    [
        case("strict-on-cpu-and-memory", R(1, 1), R(2, 2), ZERO, True),
        case("equal-cpu-is-not-less", R(2, 1), R(2, 2), ZERO, False),
        case("scalar-less", R(1, 1, {GPU: 1}), R(2, 2, {GPU: 2}), ZERO, True),
        case("scalar-equal-fails", R(1, 1, {GPU: 2}), R(2, 2, {GPU: 2}), ZERO, False),
        case("zero-missing-right-reads-zero", R(1, 1, {GPU: 0}), R(2, 2), ZERO, False),
        case("zero-right-only-key-not-examined", R(1, 1), R(2, 2, {GPU: 0}), ZERO, True),
        case("infinity-missing-right-skipped", R(1, 1, {GPU: 5}), R(2, 2), INFINITY, True),
        case("infinity-right-only-key-fails", R(1, 1), R(2, 2, {GPU: 5}), INFINITY, False),
    ],
)
def test_less(left: Resource, right: Resource, dv: DimensionDefault, expected: bool) -> None:
    assert left.less(right, dv) is expected


@pytest.mark.parametrize(
    ("left", "right", "dv", "expected"),
    [
        case("equal", R(1, 1, {GPU: 1}), R(1, 1, {GPU: 1}), ZERO, True),
        case("cpu-within-epsilon", R(1000.09), R(1000), ZERO, True),
        case("cpu-at-epsilon-fails", R(1000.1), R(1000), ZERO, False),
        case("memory-greater", R(0, 2), R(0, 1), ZERO, False),
        case("zero-missing-right-reads-zero", R(0, 0, {GPU: 1}), R(), ZERO, False),
        case("zero-missing-right-small-ok", R(0, 0, {GPU: 0.05}), R(), ZERO, True),
        case("zero-right-only-key-never-examined", R(), R(0, 0, {GPU: -5}), ZERO, True),
        case("infinity-missing-right-skipped", R(0, 0, {GPU: 99}), R(), INFINITY, True),
        case("infinity-right-key-missing-left-false", R(), R(0, 0, {GPU: 5}), INFINITY, False),
        case(
            "infinity-right-key-missing-left-nonnil-false",
            R(0, 0, {FOO: 0}),
            R(0, 0, {GPU: 5}),
            INFINITY,
            False,
        ),
        case(
            "infinity-both-present-compared", R(0, 0, {GPU: 6}), R(0, 0, {GPU: 5}), INFINITY, False
        ),
    ],
)
def test_less_equal(left: Resource, right: Resource, dv: DimensionDefault, expected: bool) -> None:
    assert left.less_equal(right, dv) is expected


@pytest.mark.parametrize(
    ("left", "right", "dv", "expected"),
    [
        case("all-ok", R(1, 1), R(2, 2), ZERO, (True, [])),
        case(
            "lists-cpu-memory-then-sorted-scalars",
            R(3, 3, {"z.com/a": 2, "a.com/z": 2, GPU: 0}),
            R(2, 2, {"z.com/a": 1}),
            ZERO,
            (False, ["cpu", "memory", "a.com/z", "z.com/a"]),
        ),
        case("no-infinity-key-presence-check", R(), R(0, 0, {GPU: 5}), INFINITY, (True, [])),
        case("infinity-missing-right-skipped", R(0, 0, {GPU: 5}), R(), INFINITY, (True, [])),
        case("zero-missing-right-fails", R(0, 0, {GPU: 5}), R(), ZERO, (False, [GPU])),
    ],
)
def test_less_equal_with_resources_name(
    left: Resource, right: Resource, dv: DimensionDefault, expected: tuple[bool, list[str]]
) -> None:
    assert left.less_equal_with_resources_name(right, dv) == expected


@pytest.mark.parametrize(
    ("left", "right", "dv", "expected"),
    [
        case("cpu-less", R(1, 9), R(2, 2), ZERO, True),
        case("memory-less", R(9, 1), R(2, 2), ZERO, True),
        case("nothing-less", R(2, 2, {GPU: 2}), R(2, 2, {GPU: 2}), ZERO, False),
        case("zero-right-only-key-counts-as-less", R(2, 2), R(2, 2, {GPU: 0}), ZERO, True),
        case("infinity-right-only-key-not-less", R(2, 2), R(2, 2, {GPU: 5}), INFINITY, False),
        case("infinity-left-only-key-is-less", R(2, 2, {GPU: 5}), R(2, 2), INFINITY, True),
        case("zero-left-only-key-vs-zero", R(2, 2, {GPU: 5}), R(2, 2), ZERO, False),
        case("scalar-less", R(2, 2, {GPU: 1}), R(2, 2, {GPU: 2}), ZERO, True),
    ],
)
def test_less_partly(left: Resource, right: Resource, dv: DimensionDefault, expected: bool) -> None:
    assert left.less_partly(right, dv) is expected


@pytest.mark.parametrize(
    ("left", "right", "dv", "expected"),
    [
        case("cpu-within-epsilon", R(2.05, 9), R(2, 2), ZERO, True),
        case("nothing", R(3, 3, {GPU: 3}), R(2, 2, {GPU: 2}), ZERO, False),
        case("scalar-equal", R(3, 3, {GPU: 2}), R(2, 2, {GPU: 2}), ZERO, True),
        case("zero-right-only-key", R(3, 3), R(2, 2, {GPU: 0}), ZERO, True),
        case("infinity-left-only-key", R(3, 3, {GPU: 9}), R(2, 2), INFINITY, True),
        case("infinity-right-only-key-ignored", R(3, 3), R(2, 2, {GPU: 9}), INFINITY, False),
    ],
)
def test_less_equal_partly(
    left: Resource, right: Resource, dv: DimensionDefault, expected: bool
) -> None:
    assert left.less_equal_partly(right, dv) is expected


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("exact", R(1, 2, {GPU: 3}), R(1, 2, {GPU: 3}), True),
        case("within-epsilon", R(1.05, 2, {GPU: 3.05}), R(1, 2, {GPU: 3}), True),
        case("cpu-differs", R(1.1, 2), R(1, 2), False),
        case("left-scalar-vs-missing-reads-zero", R(1, 2, {GPU: 3}), R(1, 2), False),
        case("right-only-scalar-not-examined", R(1, 2), R(1, 2, {GPU: 3}), True),
        case("max-float-equal", Resource.infinite(), Resource.infinite(), True),
    ],
)
def test_equal(left: Resource, right: Resource, expected: bool) -> None:
    assert left.equal(right, ZERO) is expected
    assert left.equal(right, INFINITY) is expected  # dv is unused


@pytest.mark.parametrize(
    ("left", "right", "dv", "expected"),
    [
        case("not-greater", R(1, 1), R(2, 2), ZERO, (False, [])),
        case("greater-names", R(3, 1, {GPU: 5}), R(2, 2), ZERO, (True, ["cpu", GPU])),
        case("infinity-missing-right-skipped", R(1, 1, {GPU: 5}), R(2, 2), INFINITY, (False, [])),
    ],
)
def test_greater_partly(
    left: Resource, right: Resource, dv: DimensionDefault, expected: tuple[bool, list[str]]
) -> None:
    assert left.greater_partly(right, dv) == expected


# --- comparisons restricted to requested dimensions ----------------------------------


@pytest.mark.parametrize(
    ("left", "right", "req", "expected"),
    [
        case("no-epsilon", R(1000.05, 0), R(1000, 0), R(1), (False, ["cpu"])),
        case("unrequested-cpu-not-compared", R(5000, 0), R(1000, 0), R(0, 1), (True, [])),
        case("memory-fails", R(0, 5), R(0, 4), R(0, 1), (False, ["memory"])),
        case(
            "pods-skipped",
            R(0, 0, {"pods": 9}),
            R(0, 0, {"pods": 1}),
            R(0, 0, {"pods": 1}),
            (True, []),
        ),
        case(
            "scalar-fails", R(0, 0, {GPU: 2}), R(0, 0, {GPU: 1}), R(0, 0, {GPU: 1}), (False, [GPU])
        ),
        case(
            "scalar-missing-right-reads-zero",
            R(0, 0, {GPU: 2}),
            R(),
            R(0, 0, {GPU: 1}),
            (False, [GPU]),
        ),
        case(
            "nil-left-map-skips-scalars", R(1, 1), R(1, 1, {GPU: -1}), R(1, 1, {GPU: 1}), (True, [])
        ),
        case(
            "zero-request-scalar-skipped",
            R(0, 0, {GPU: 2}),
            R(0, 0, {GPU: 1}),
            R(0, 0, {GPU: 0}),
            (True, []),
        ),
        case("rr-none-fails-on-present-dims", R(5, 0, {GPU: 1}), None, R(1), (False, ["cpu", GPU])),
        case(
            "req-none-falls-back-to-zero-less-equal",
            R(1000.05, 0, {GPU: 5}),
            R(1000),
            None,
            (False, [GPU]),
        ),
    ],
)
def test_less_equal_with_dimension_and_resources_name(
    left: Resource, right: Resource | None, req: Resource | None, expected: tuple[bool, list[str]]
) -> None:
    assert left.less_equal_with_dimension_and_resources_name(right, req) == expected


@pytest.mark.parametrize(
    ("left", "right", "req", "expected"),
    [
        case("req-none", R(), R(), None, (False, [])),
        case("cpu-within-epsilon", R(1000.05), R(1000), R(1), (True, ["cpu"])),
        case("unrequested-dims-ignored", R(0, 0), R(5, 5), R(0, 0), (False, [])),
        case(
            "pods-skipped",
            R(9, 9, {"pods": 1}),
            R(1, 1, {"pods": 5}),
            R(0, 0, {"pods": 1}),
            (False, []),
        ),
        case(
            "scalar-found", R(9, 9, {GPU: 1}), R(1, 1, {GPU: 5}), R(1, 1, {GPU: 1}), (True, [GPU])
        ),
        case("missing-scalars-read-zero", R(9, 9), R(1, 1), R(0, 0, {GPU: 1}), (True, [GPU])),
    ],
)
def test_less_equal_partly_with_dimension(
    left: Resource, right: Resource, req: Resource | None, expected: tuple[bool, list[str]]
) -> None:
    assert left.less_equal_partly_with_dimension(right, req) == expected


@pytest.mark.parametrize(
    ("left", "right", "req", "expected"),
    [
        case("req-none", R(), R(), None, (False, [])),
        case("both-zero-dimension-filtered", R(0, 5), R(0, 4), R(1, 1), (False, [])),
        case("unfiltered-plain-variant-would-match", R(0, 5), R(0, 4), R(1, 0), (False, [])),
        case("in-use-dimension-kept", R(1, 5), R(2, 4), R(1, 1), (True, ["cpu"])),
        case("deserved-only-dimension-kept", R(0, 5), R(2, 4), R(1, 1), (True, ["cpu"])),
        case(
            "scalar-both-zero-filtered",
            R(9, 9, {GPU: 0.05}),
            R(1, 1),
            R(0, 0, {GPU: 1}),
            (False, []),
        ),
        case("scalar-kept", R(9, 9, {GPU: 1}), R(1, 1, {GPU: 1}), R(0, 0, {GPU: 1}), (True, [GPU])),
        case(
            "pods-never-reported",
            R(9, 9, {"pods": 1}),
            R(1, 1, {"pods": 2}),
            R(0, 0, {"pods": 1}),
            (False, []),
        ),
    ],
)
def test_less_equal_partly_with_dimension_zero_filtered(
    left: Resource, right: Resource, req: Resource | None, expected: tuple[bool, list[str]]
) -> None:
    assert left.less_equal_partly_with_dimension_zero_filtered(right, req) == expected


def test_zero_filtered_differs_from_plain_on_idle_dimension() -> None:
    # cpu is requested but neither used nor deserved: the plain variant says "fits"
    left, right, req = R(0, 5), R(0, 4), R(1, 1)
    assert left.less_equal_partly_with_dimension(right, req) == (True, ["cpu"])
    assert left.less_equal_partly_with_dimension_zero_filtered(right, req) == (False, [])


@pytest.mark.parametrize(
    ("left", "right", "req", "expected"),
    [
        case("req-none", R(9), R(), None, (False, [])),
        case("rr-none-is-empty", R(1, 0, {GPU: 1}), None, R(1, 1, {GPU: 1}), (True, ["cpu", GPU])),
        case("strict-no-epsilon", R(1000.01), R(1000), R(1), (True, ["cpu"])),
        case("equal-not-greater", R(1000), R(1000), R(1), (False, [])),
        case("unrequested-not-reported", R(9, 9), R(1, 1), R(0, 1), (True, ["memory"])),
        case("pods-skipped", R(0, 0, {"pods": 9}), R(), R(0, 0, {"pods": 1}), (False, [])),
        case(
            "scalar-missing-right-reads-zero",
            R(0, 0, {GPU: 1}),
            R(),
            R(0, 0, {GPU: 1}),
            (True, [GPU]),
        ),
    ],
)
def test_greater_partly_with_dimension(
    left: Resource, right: Resource | None, req: Resource | None, expected: tuple[bool, list[str]]
) -> None:
    assert left.greater_partly_with_dimension(right, req) == expected


@pytest.mark.parametrize(
    ("left", "right", "req", "expected"),
    [
        case("req-none", R(9), R(), None, (False, [])),
        case("rr-none-nothing-relevant", R(9, 9, {GPU: 1}), None, R(1, 1, {GPU: 1}), (False, [])),
        case("cpu-below-epsilon-in-rr-ignored", R(9), R(0.05), R(1), (False, [])),
        case("cpu-relevant", R(9), R(1), R(1), (True, ["cpu"])),
        case(
            "scalar-missing-in-rr-ignored",
            R(0, 0, {GPU: 9}),
            R(0, 0, {FOO: 1}),
            R(0, 0, {GPU: 1}),
            (False, []),
        ),
        case(
            "scalar-present-with-zero-is-relevant",
            R(0, 0, {GPU: 9}),
            R(0, 0, {GPU: 0}),
            R(0, 0, {GPU: 1}),
            (True, [GPU]),
        ),
        case(
            "pods-skipped",
            R(0, 0, {"pods": 9}),
            R(0, 0, {"pods": 1}),
            R(0, 0, {"pods": 1}),
            (False, []),
        ),
    ],
)
def test_greater_partly_with_relevant_dimensions(
    left: Resource, right: Resource | None, req: Resource | None, expected: tuple[bool, list[str]]
) -> None:
    assert left.greater_partly_with_relevant_dimensions(right, req) == expected


# --- diff and friends ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "dv", "increased", "decreased"),
    [
        case("cpu-up-memory-down", R(5, 1), R(2, 4), ZERO, R(3, 0, {}), R(0, 3, {})),
        case(
            "equal-cpu-goes-to-decreased-as-zero", R(2, 2), R(2, 2), ZERO, R(0, 0, {}), R(0, 0, {})
        ),
        case(
            "equal-scalar-yields-decreased-zero-entry",
            R(0, 0, {GPU: 5}),
            R(0, 0, {GPU: 5}),
            ZERO,
            R(0, 0, {}),
            R(0, 0, {GPU: 0}),
        ),
        case(
            "scalar-up", R(0, 0, {GPU: 5}), R(0, 0, {GPU: 2}), ZERO, R(0, 0, {GPU: 3}), R(0, 0, {})
        ),
        case("zero-left-only-key", R(0, 0, {GPU: 5}), R(), ZERO, R(0, 0, {GPU: 5}), R(0, 0, {})),
        case("zero-right-only-key", R(), R(0, 0, {GPU: 5}), ZERO, R(0, 0, {}), R(0, 0, {GPU: 5})),
        case(
            "infinity-right-missing-marks-decreased-minus-one",
            R(0, 0, {GPU: 5}),
            R(),
            INFINITY,
            R(0, 0, {}),
            R(0, 0, {GPU: -1}),
        ),
        case(
            "infinity-left-missing-marks-increased-minus-one",
            R(),
            R(0, 0, {GPU: 5}),
            INFINITY,
            R(0, 0, {GPU: -1}),
            R(0, 0, {}),
        ),
        case(
            "literal-minus-one-read-as-infinity-even-with-zero",
            R(0, 0, {GPU: -1}),
            R(0, 0, {GPU: 3}),
            ZERO,
            R(0, 0, {GPU: -1}),
            R(0, 0, {}),
        ),
        case(
            "max-task-num-not-diffed",
            R(0, 0, None, 5),
            R(0, 0, None, 1),
            ZERO,
            R(0, 0, {}),
            R(0, 0, {}),
        ),
    ],
)
def test_diff(
    left: Resource,
    right: Resource,
    dv: DimensionDefault,
    increased: Resource,
    decreased: Resource,
) -> None:
    before_left, before_right = left.clone(), right.clone()
    inc, dec = left.diff(right, dv)
    assert same(inc, increased), repr(inc)
    assert same(dec, decreased), repr(dec)
    assert inc.scalars is not None and dec.scalars is not None
    assert same(left, before_left) and same(right, before_right)


@pytest.mark.parametrize(
    ("left", "right", "dv", "expected"),
    [
        case("min-cpu-memory", R(5, 1), R(2, 4), ZERO, R(2, 1)),
        case("nil-left-map-done", R(5, 5), R(1, 1, {GPU: 1}), ZERO, R(1, 1)),
        case("nil-right-map-zero-zeroes", R(5, 5, {GPU: 3}), R(9, 9), ZERO, R(5, 5, {GPU: 0})),
        case(
            "nil-right-map-infinity-keeps", R(5, 5, {GPU: 3}), R(9, 9), INFINITY, R(5, 5, {GPU: 3})
        ),
        case("present-key-min", R(0, 0, {GPU: 3}), R(0, 0, {GPU: 1}), INFINITY, R(0, 0, {GPU: 1})),
        case(
            "missing-key-zero-zeroes", R(0, 0, {GPU: 3}), R(0, 0, {FOO: 1}), ZERO, R(0, 0, {GPU: 0})
        ),
        case(
            "missing-key-infinity-keeps",
            R(0, 0, {GPU: 3}),
            R(0, 0, {FOO: 1}),
            INFINITY,
            R(0, 0, {GPU: 3}),
        ),
        case("right-only-keys-never-added", R(0, 0, {}), R(0, 0, {FOO: 1}), ZERO, R(0, 0, {})),
    ],
)
def test_min_dimension_resource_mutates_self(
    left: Resource, right: Resource, dv: DimensionDefault, expected: Resource
) -> None:
    assert left.min_dimension_resource(right, dv) is left
    assert same(left, expected), repr(left)


def test_min_dimension_resource_keeps_nil_map_nil() -> None:
    left = R(5, 5)
    left.min_dimension_resource(R(1, 1, {GPU: 1}), ZERO)
    assert left.scalars is None


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case(
            "per-dimension-excess",
            R(5, 1, {GPU: 5, FOO: 1}),
            R(2, 4, {GPU: 1, FOO: 3}),
            R(3, 0, {GPU: 4}),
        ),
        case("left-only-scalar-kept", R(0, 0, {GPU: 5}), R(), R(0, 0, {GPU: 5})),
        case("left-none-is-empty", None, R(1), R()),
    ],
)
def test_exceeded_part(left: Resource | None, right: Resource | None, expected: Resource) -> None:
    assert same(exceeded_part(left, right), expected)


def test_exceeded_part_with_right_none_returns_left_itself() -> None:
    left = R(1)
    assert exceeded_part(left, None) is left


def test_exceeded_part_of_two_nones_is_empty() -> None:
    assert same(exceeded_part(None, None), R())


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("max-cpu-memory-no-map", R(5, 1), R(2, 4), R(5, 4)),
        case(
            "union-of-scalars",
            R(0, 0, {GPU: 5}),
            R(0, 0, {FOO: 3, GPU: 7}),
            R(0, 0, {GPU: 7, FOO: 3}),
        ),
        case("negative-scalars-dropped", R(0, 0, {GPU: -1}), R(0, 0, {FOO: -2}), R(0, 0, {})),
        case("zero-scalar-kept", R(0, 0, {GPU: 0}), R(), R(0, 0, {GPU: 0})),
        case(
            "negative-left-vs-positive-right",
            R(0, 0, {GPU: -5}),
            R(0, 0, {GPU: 2}),
            R(0, 0, {GPU: 2}),
        ),
        case("one-none-counts-as-empty", R(3, 0, {GPU: 1}), None, R(3, 0, {GPU: 1})),
        case("max-task-num-not-carried", R(0, 0, None, 5), R(0, 0, None, 7), R()),
    ],
)
def test_res_max(left: Resource | None, right: Resource | None, expected: Resource) -> None:
    got = res_max(left, right)
    assert got is not None and same(got, expected), repr(got)


def test_res_max_of_two_nones_is_none() -> None:
    assert res_max(None, None) is None


def test_res_max_no_scalar_map_when_neither_has_one() -> None:
    got = res_max(R(1), R(2))
    assert got is not None and got.scalars is None


@pytest.mark.parametrize(
    ("left", "right", "expected", "has_map"),
    [
        case("min-cpu-memory", R(5, 1), R(2, 4), R(2, 1), False),
        case("one-nil-map-no-scalars", R(0, 0, {GPU: 1}), R(), R(), False),
        case(
            "keys-of-left-missing-right-reads-zero",
            R(0, 0, {GPU: 5, FOO: 2}),
            R(0, 0, {GPU: 3, "z.com/x": 1}),
            R(0, 0, {GPU: 3, FOO: 0}),
            True,
        ),
        case("negative-left-kept", R(0, 0, {GPU: -2}), R(0, 0, {}), R(0, 0, {GPU: -2}), True),
    ],
)
def test_res_min(left: Resource, right: Resource, expected: Resource, has_map: bool) -> None:
    got = res_min(left, right)
    assert same(got, expected)
    assert (got.scalars is not None) is has_map


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("zero-over-zero", 0.0, 0.0, 0.0),
        case("something-over-zero", 5.0, 0.0, 1.0),
        case("ratio", 1.0, 4.0, 0.25),
        case("over-one", 8.0, 4.0, 2.0),
    ],
)
def test_share(left: float, right: float, expected: float) -> None:
    assert share(left, right) == expected


@pytest.mark.parametrize(
    ("r1", "r2", "expected", "without_pods"),
    [
        case(
            "both-present",
            R(1, 1, {GPU: 1, "pods": 1}),
            R(1, 0, {GPU: 1, "pods": 1}),
            ["cpu", GPU, "pods"],
            ["cpu", GPU],
        ),
        case("below-epsilon-excluded", R(0.05, 1), R(1, 1), ["memory"], ["memory"]),
        case("disjoint", R(1, 0), R(0, 1), [], []),
    ],
)
def test_intersection(
    r1: Resource, r2: Resource, expected: list[str], without_pods: list[str]
) -> None:
    assert intersection(r1, r2) == expected
    assert intersection_with_ignored_scalar_resources(r1, r2) == without_pods


# --- equality and output -------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("identical", R(1, 2, {GPU: 3}, 4), R(1, 2, {GPU: 3}, 4), True),
        case("nil-map-equals-empty-map", R(1, 2), R(1, 2, {}), True),
        case("zero-key-differs-from-missing", R(1, 2, {GPU: 0}), R(1, 2), False),
        case("no-epsilon", R(1.0001), R(1), False),
        case("max-task-num-compared", R(0, 0, None, 1), R(0, 0, None, 2), False),
        case("different-keys-same-size", R(0, 0, {GPU: 1}), R(0, 0, {FOO: 1}), False),
        case("nan-never-equal", R(0, 0, {GPU: float("nan")}), R(0, 0, {GPU: float("nan")}), False),
    ],
)
def test_semantic_equal(left: Resource, right: Resource, expected: bool) -> None:
    assert left.semantic_equal(right) is expected
    assert right.semantic_equal(left) is expected


def test_semantic_equal_nan_same_object_still_unequal() -> None:
    nan = float("nan")
    assert not R(0, 0, {GPU: nan}).semantic_equal(R(0, 0, {GPU: nan}))


def test_to_quantities_uses_kubernetes_units() -> None:
    res = R(1500, 1024, {GPU: 2000, "pods": 3, "ephemeral-storage": 5000})
    assert res.to_quantities() == {
        "cpu": 1.5,
        "memory": 1024,
        "ephemeral-storage": 5.0,
        GPU: 2.0,
        "pods": 3,
    }
    assert R().to_quantities() == {"cpu": 0.0, "memory": 0.0}


def test_repr_is_volcano_string_with_sorted_scalars() -> None:
    res = R(1000, 1024, {"z.com/x": 1, GPU: 1000})
    assert repr(res) == "cpu 1000.00, memory 1024.00, nvidia.com/gpu 1000.00, z.com/x 1.00"
    assert repr(R()) == "cpu 0.00, memory 0.00"
