"""Property tests: arithmetic and ordering laws ``Resource`` must keep.

Values are whole numbers (as ``MilliValue``/``Value`` produce) so float arithmetic is
exact and the laws can be asserted with ``==``; the epsilon-sensitive laws use
fractional values explicitly.
"""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import (
    INFINITY,
    MIN_RESOURCE,
    ZERO,
    DimensionDefault,
    Resource,
    exceeded_part,
    intersection,
    res_max,
    res_min,
    share,
)

LAWS = settings(max_examples=200, deadline=None, database=None)

SCALAR_NAMES = ["nvidia.com/gpu", "example.com/foo", "pods", "hugepages-2Mi"]

amounts = st.integers(min_value=0, max_value=10**12).map(float)
small_amounts = st.integers(min_value=0, max_value=5).map(float)  # collisions on purpose
scalar_maps = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(SCALAR_NAMES), st.one_of(amounts, small_amounts), max_size=4),
)
defaults = st.sampled_from([ZERO, INFINITY])


@st.composite
def resources(draw: st.DrawFn) -> Resource:
    return Resource(
        draw(st.one_of(amounts, small_amounts)),
        draw(st.one_of(amounts, small_amounts)),
        draw(scalar_maps),
        draw(st.integers(min_value=0, max_value=1000)),
    )


cpu_mem_only = st.builds(
    Resource,
    st.one_of(amounts, small_amounts),
    st.one_of(amounts, small_amounts),
)


def names(*rs: Resource) -> set[str]:
    out = {"cpu", "memory"}
    for r in rs:
        out.update(r.scalars or {})
    return out


@LAWS
@given(resources(), resources())
def test_add_then_sub_restores_every_dimension(a: Resource, b: Resource) -> None:
    result = a.clone().add(b).sub(b)  # never asserts: b <= a + b
    for name in names(a, b):
        assert result.get(name) == a.get(name)
    if a.scalars is not None and set(b.scalars or {}) <= set(a.scalars):
        assert result.semantic_equal(a)


@LAWS
@given(resources(), resources())
def test_add_is_commutative_per_dimension(a: Resource, b: Resource) -> None:
    ab = a.clone().add(b)
    ba = b.clone().add(a)
    for name in names(a, b):
        assert ab.get(name) == ba.get(name)


@LAWS
@given(resources(), defaults)
def test_less_equal_is_reflexive(a: Resource, dv: DimensionDefault) -> None:
    assert a.less_equal(a, dv)
    assert a.less_equal_with_resources_name(a, dv) == (True, [])
    assert a.equal(a, dv)
    assert not a.less(a, dv)


@LAWS
@given(cpu_mem_only, cpu_mem_only, cpu_mem_only)
def test_less_equal_is_transitive_on_whole_numbers(a: Resource, b: Resource, c: Resource) -> None:
    if a.less_equal(b, ZERO) and b.less_equal(c, ZERO):
        assert a.less_equal(c, ZERO)


fractions = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@LAWS
@given(fractions, fractions, fractions)
def test_less_equal_is_transitive_within_two_epsilons(x: float, y: float, z: float) -> None:
    a, b, c = Resource(x, x), Resource(y, y), Resource(z, z)
    if a.less_equal(b, ZERO) and b.less_equal(c, ZERO):
        assert a.milli_cpu <= c.milli_cpu + 2 * MIN_RESOURCE
        assert a.memory <= c.memory + 2 * MIN_RESOURCE


@LAWS
@given(resources(), resources(), defaults)
def test_less_implies_less_equal(a: Resource, b: Resource, dv: DimensionDefault) -> None:
    if a.less(b, dv):
        assert a.less_equal(b, dv)


@LAWS
@given(resources(), resources(), defaults)
def test_less_equal_implies_less_equal_partly(
    a: Resource, b: Resource, dv: DimensionDefault
) -> None:
    if a.less_equal(b, dv):
        assert a.less_equal_partly(b, dv)


@LAWS
@given(resources(), resources())
def test_greater_partly_is_the_negation_of_less_equal_with_zero(a: Resource, b: Resource) -> None:
    greater, exceeded = a.greater_partly(b, ZERO)
    assert greater is not a.less_equal(b, ZERO)
    assert bool(exceeded) is greater


@LAWS
@given(resources(), resources())
def test_diff_reconstructs_left_from_right(a: Resource, b: Resource) -> None:
    increased, decreased = a.diff(b, ZERO)
    for name in names(a, b):
        assert increased.get(name) >= 0 and decreased.get(name) >= 0
        assert a.get(name) == b.get(name) + increased.get(name) - decreased.get(name)
        # a dimension never moves both ways
        assert increased.get(name) == 0 or decreased.get(name) == 0


@LAWS
@given(resources(), resources())
def test_diff_keys_cover_the_union_of_scalars(a: Resource, b: Resource) -> None:
    increased, decreased = a.diff(b, INFINITY)
    union = set(a.scalars or {}) | set(b.scalars or {})
    assert set(increased.scalars or {}) | set(decreased.scalars or {}) == union
    assert not set(increased.scalars or {}) & set(decreased.scalars or {})


@LAWS
@given(resources(), resources())
def test_exceeded_part_is_positive_excess_per_dimension(a: Resource, b: Resource) -> None:
    excess = exceeded_part(a, b)
    for name in names(a, b):
        assert excess.get(name) == max(0.0, a.get(name) - b.get(name))
    for name in excess.scalars or {}:
        assert a.get(name) > b.get(name)


@LAWS
@given(resources(), resources(), defaults)
def test_min_dimension_resource_is_below_both(
    a: Resource, b: Resource, dv: DimensionDefault
) -> None:
    capped = a.clone().min_dimension_resource(b, dv)
    assert capped.less_equal(a, ZERO)
    for name in names(capped):
        assert capped.get(name) <= a.get(name)
        if dv == ZERO or name in ("cpu", "memory") or name in (b.scalars or {}):
            assert capped.get(name) <= b.get(name)
    if dv == ZERO:
        assert capped.less_equal(b, ZERO)


@LAWS
@given(resources(), resources())
def test_min_dimension_resource_adds_no_keys(a: Resource, b: Resource) -> None:
    capped = a.clone().min_dimension_resource(b, ZERO)
    assert set(capped.scalars or {}) == set(a.scalars or {})


@LAWS
@given(resources(), resources())
def test_res_max_is_above_both(a: Resource, b: Resource) -> None:
    top = res_max(a, b)
    assert top is not None
    assert a.less_equal(top, ZERO) and b.less_equal(top, ZERO)
    for name in names(a, b):
        assert top.get(name) == max(a.get(name), b.get(name))


@LAWS
@given(resources(), resources())
def test_res_min_is_below_both_on_left_dimensions(a: Resource, b: Resource) -> None:
    low = res_min(a, b)
    assert low.milli_cpu == min(a.milli_cpu, b.milli_cpu)
    assert low.memory == min(a.memory, b.memory)
    for name in low.scalars or {}:
        assert low.get(name) <= a.get(name) and low.get(name) <= b.get(name)


@LAWS
@given(amounts, st.one_of(st.just(0.0), amounts))
def test_share_is_finite_and_non_negative(used: float, deserved: float) -> None:
    value = share(used, deserved)
    assert 0 <= value < float("inf")
    if used <= deserved and deserved > 0:
        assert value <= 1


@LAWS
@given(resources())
def test_multi_by_one_is_identity(a: Resource) -> None:
    assert a.clone().multi(1.0).semantic_equal(a)


@LAWS
@given(resources(), st.integers(min_value=0, max_value=1000).map(float))
def test_multi_scales_every_dimension(a: Resource, ratio: float) -> None:
    scaled = a.clone().multi(ratio)
    for name in names(a):
        assert scaled.get(name) == a.get(name) * ratio
    assert scaled.max_task_num == a.max_task_num


@LAWS
@given(resources())
def test_clone_is_independent(a: Resource) -> None:
    copy = a.clone()
    assert copy.semantic_equal(a)
    copy.add(Resource(1, 1, {"nvidia.com/gpu": 1}))
    assert not copy.semantic_equal(a)


@LAWS
@given(resources(), resources())
def test_intersection_is_symmetric_as_a_set(a: Resource, b: Resource) -> None:
    assert set(intersection(a, b)) == set(intersection(b, a))
    assert set(intersection(a, b)) <= set(a.resource_names())


@LAWS
@given(resources(), resources())
def test_semantic_equal_is_symmetric(a: Resource, b: Resource) -> None:
    assert a.semantic_equal(b) is b.semantic_equal(a)


#: Amounts with the infinity mark (-1) and other negatives, which ``diff`` treats apart.
marked_amounts = st.one_of(amounts, small_amounts, st.sampled_from([-1.0, -2.0, -0.5]))


@st.composite
def marked_resources(draw: st.DrawFn) -> Resource:
    scalars = draw(
        st.one_of(st.none(), st.dictionaries(st.sampled_from(SCALAR_NAMES), marked_amounts))
    )
    return Resource(draw(marked_amounts), draw(marked_amounts), scalars)


@LAWS
@given(marked_resources(), marked_resources())
def test_exceeded_part_is_the_increased_side_of_diff(a: Resource, b: Resource) -> None:
    expected = a.diff(b, ZERO)[0]
    got = exceeded_part(a, b)
    assert (got.milli_cpu, got.memory, got.scalars, got.max_task_num) == (
        expected.milli_cpu,
        expected.memory,
        expected.scalars,
        expected.max_task_num,
    )
    assert list(got.scalars or {}) == list(expected.scalars or {})


@LAWS
@given(resources(), resources())
def test_sub_without_assert_logs_exactly_the_shortfalls_less_equal_finds(
    a: Resource, b: Resource
) -> None:
    expected = a.clone()._sub(b)
    with mock.patch("scheduler_core.api.resource._log") as logged:
        result = a.clone().sub_without_assert(b)
    assert logged.error.called == (not b.less_equal(a, ZERO))
    assert (result.milli_cpu, result.memory, result.scalars) == (
        expected.milli_cpu,
        expected.memory,
        expected.scalars,
    )


@LAWS
@given(resources())
def test_added_to_zero_is_adding_to_an_empty_resource(amount: Resource) -> None:
    copy, reference = amount.added_to_zero(), Resource.empty().add(amount)
    assert (copy.milli_cpu, copy.memory, copy.scalars, copy.max_task_num) == (
        reference.milli_cpu,
        reference.memory,
        reference.scalars,
        reference.max_task_num,
    )
    if copy.scalars is not None:
        assert copy.scalars is not amount.scalars  # a copy the caller may change
