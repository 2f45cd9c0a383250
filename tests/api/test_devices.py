"""DRA device counting: CEL selectors as kube-scheduler evaluates them, compiled once per
object version, counted per node and quota name, and never guessed when they cannot be
judged."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.api.devices import (
    CelEnvironment,
    CompiledSelector,
    DeviceCatalog,
    DeviceQuotaNames,
    SelectorError,
    Unjudged,
)
from scheduler_core.cache.convert_devices import device_class_to_info, resource_slice_to_info
from tests.builders import device, device_class, gpus, resource_slice

GPU = "gpu.example.com"


def catalog(*objects: dict[str, Any]) -> DeviceCatalog:
    out = DeviceCatalog()
    for obj in objects:
        if obj["kind"] == "ResourceSlice":
            out.put_slice(resource_slice_to_info(obj))
        else:
            out.put_class(device_class_to_info(obj))
    return out


A100 = device(
    "gpu-0",
    {"model": "a100", "index": 3, "healthy": True, "ext.example.com/family": "ampere"},
    {"memory": "80Gi"},
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'device.driver == "{GPU}"', True),
        ('device.driver == "other.example.com"', False),
        (f'device.attributes["{GPU}"].model == "a100"', True),
        (f'device.attributes["{GPU}"].index > 2', True),
        (f'device.attributes["{GPU}"].healthy', True),
        ('device.attributes["ext.example.com"].family == "ampere"', True),
        # An unknown domain is an empty map, as in Kubernetes: has() is false on it.
        ('has(device.attributes["unknown.example.com"].model)', False),
        (f'has(device.attributes["{GPU}"].model)', True),
        (f'device.capacity["{GPU}"].memory.compareTo(quantity("40Gi")) >= 0', True),
        (f'device.capacity["{GPU}"].memory.isGreaterThan(quantity("80Gi"))', False),
        (f'device.capacity["{GPU}"].memory.isLessThan(quantity("81Gi"))', True),
        (f'device.capacity["{GPU}"].memory == quantity("81920Mi")', True),
        (f'device.capacity["{GPU}"].memory.asInteger() == 85899345920', True),
        ('isQuantity("1Gi") && !isQuantity("1 Gi")', True),
        (f'"a100" in [device.attributes["{GPU}"].model, "h100"]', True),
    ],
)
def test_selector_is_evaluated_as_kubernetes_does(expression: str, expected: bool) -> None:
    cat = catalog(resource_slice("s", "n1", A100), device_class("c", expression))
    assert cat.node_count("n1", "c") == (1 if expected else 0)


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("device.driver ==", "Syntax error"),
        ("foo.bar", "undeclared reference"),
        ('semver("1.0.0").major() == 1', "undeclared reference"),
        (f'device.capacity["{GPU}"].memory.add(1)', "undeclared reference to 'add'"),
        ("1 + 1", "not a bool"),
    ],
)
def test_selector_that_does_not_compile_makes_its_class_not_evaluable(
    expression: str, why: str
) -> None:
    cat = catalog(resource_slice("s", "n1", A100), device_class("c", expression))
    count = cat.node_count("n1", "c")
    assert isinstance(count, Unjudged)
    assert "DeviceClass c: selector #0 does not compile" in count.reason
    assert why in count.reason


def test_evaluation_error_on_a_device_makes_the_class_not_evaluable_on_that_node() -> None:
    # kube-scheduler aborts the allocation on such an error: no count is the one it uses.
    cat = catalog(
        resource_slice("s1", "n1", A100, device("bare")),
        resource_slice("s2", "n2", A100),
        device_class("c", f'device.attributes["{GPU}"].model == "a100"'),
    )
    count = cat.node_count("n1", "c")
    assert isinstance(count, Unjudged)
    assert "ResourceSlice s1" in count.reason and "model" in count.reason
    assert cat.node_count("n2", "c") == 1


def test_class_not_in_the_cache_is_not_evaluable() -> None:
    cat = catalog(resource_slice("s", "n1", A100))
    assert cat.node_count("n1", "gone") == Unjudged("DeviceClass gone not in the cache")


class CountingEnv(CelEnvironment):
    def __init__(self) -> None:
        super().__init__()
        self.compiled: list[str] = []

    def compile(self, expression: str) -> CompiledSelector:
        self.compiled.append(expression)
        return super().compile(expression)


def test_selector_is_compiled_once_per_object_version() -> None:
    cat = catalog(resource_slice("s", "n1", *gpus(4, model="a100")))
    env = CountingEnv()
    cat._env = env
    cls = device_class("c", f'device.attributes["{GPU}"].model == "a100"', resource_version="1")
    cat.put_class(device_class_to_info(cls))
    assert cat.node_count("n1", "c") == 4
    cat.put_class(device_class_to_info(cls))  # the same version again (a relist)
    assert cat.node_count("n1", "c") == 4
    assert len(env.compiled) == 1
    changed = device_class("c", f'device.attributes["{GPU}"].model == "h100"', resource_version="2")
    cat.put_class(device_class_to_info(changed))
    assert cat.node_count("n1", "c") == 0
    assert len(env.compiled) == 2


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    cat = catalog(
        resource_slice("old", "n1", *gpus(2), pool="p", generation=1),
        resource_slice("new", "n1", *gpus(3), pool="p", generation=2),
        device_class("c"),
    )
    assert cat.node_count("n1", "c") == 3
    cat.remove_slice("new")
    assert cat.node_count("n1", "c") == 2


def test_devices_of_two_classes_of_one_name_count_once() -> None:
    cat = catalog(
        resource_slice("s", "n1", *gpus(2, model="a100"), device("gpu-9", {"model": "h100"})),
        device_class("all-gpus"),
        device_class("a100", f'device.attributes["{GPU}"].model == "a100"'),
        device_class("other"),
    )
    names = DeviceQuotaNames({"all-gpus": "nvidia.com/gpu", "a100": "nvidia.com/gpu"})
    counts, problems = cat.node_resources("n1", names)
    assert problems == []
    assert counts == {
        "nvidia.com/gpu": 3,
        "deviceclass.resource.kubernetes.io/other": 3,
    }


def test_quota_name_is_the_extended_resource_name_then_the_mapping() -> None:
    # Pods ask an extended-resource class's devices by that name: its devices count there.
    cat = catalog(
        resource_slice("s", "n1", *gpus(2)),
        device_class("ext", extended_resource_name="example.com/gpu"),
    )
    assert cat.node_resources("n1", DeviceQuotaNames())[0] == {"example.com/gpu": 2}
    mapped = DeviceQuotaNames({"ext": "nvidia.com/gpu"})
    assert cat.node_resources("n1", mapped)[0] == {"example.com/gpu": 2}
    plain = catalog(resource_slice("s", "n1", *gpus(2)), device_class("plain"))
    assert plain.node_resources("n1", DeviceQuotaNames({"plain": "nvidia.com/gpu"}))[0] == {
        "nvidia.com/gpu": 2
    }


def test_name_with_a_class_not_evaluable_is_left_out_with_its_reason() -> None:
    cat = catalog(
        resource_slice("s", "n1", *gpus(2)),
        device_class("good"),
        device_class("bad", "device.driver =="),
    )
    names = DeviceQuotaNames({"good": "nvidia.com/gpu", "bad": "nvidia.com/gpu"})
    counts, problems = cat.node_resources("n1", names)
    assert counts == {}
    assert len(problems) == 1 and "DeviceClass bad" in problems[0].reason


def test_copy_changes_without_changing_the_original() -> None:
    cat = catalog(resource_slice("s", "n1", *gpus(2)), device_class("c"))
    fork = cat.copy()
    fork.remove_slice("s")
    fork.remove_class("c")
    assert cat.node_count("n1", "c") == 2
    assert isinstance(fork.node_count("n1", "c"), Unjudged)


def test_environment_refuses_a_non_bool_result_at_evaluation() -> None:
    env = CelEnvironment()
    selector = env.compile(f'device.attributes["{GPU}"].model')  # dyn: checked on evaluation
    info = resource_slice_to_info(resource_slice("s", "n1", A100))
    with pytest.raises(SelectorError):
        env.matches(selector, GPU, info.devices[0])


@given(
    models=st.lists(st.sampled_from(["a100", "h100", "l4"]), max_size=12),
    memories=st.lists(st.integers(min_value=1, max_value=96), min_size=12, max_size=12),
    model=st.sampled_from(["a100", "h100", "l4"]),
    at_least=st.integers(min_value=0, max_value=100),
)
def test_count_is_the_number_of_devices_the_selector_accepts(
    models: list[str], memories: list[int], model: str, at_least: int
) -> None:
    devices = [
        device(f"gpu-{i}", {"model": m}, {"memory": f"{memories[i]}Gi"})
        for i, m in enumerate(models)
    ]
    expression = (
        f'device.attributes["{GPU}"].model == "{model}" && '
        f'device.capacity["{GPU}"].memory.compareTo(quantity("{at_least}Gi")) >= 0'
    )
    cat = catalog(resource_slice("s", "n1", *devices), device_class("c", expression))
    expected = sum(1 for i, m in enumerate(models) if m == model and memories[i] >= at_least)
    assert cat.node_count("n1", "c") == expected
