"""ResourceSlices and DeviceClasses (``resource.k8s.io/v1``) into the device model.

Attributes are grouped by domain the way Kubernetes hands them to CEL: an unqualified name
(``model``) belongs to the slice's driver, a qualified one (``ext.example.com/family``) to
its own domain. Capacities become integer thousandths of a unit. A device with no
attributes is kept (it is a device; selectors that read an attribute of it fail, and the
class is then not evaluable on its node, as kube-scheduler would abort).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.api.devices import AttributeValue, Device, DeviceClassInfo, ResourceSliceInfo
from scheduler_core.api.quantity import QuantityError, milli_value, parse_quantity
from scheduler_core.cache.convert import ConversionError, _int_field, _list, _map, object_name

#: Node selection fields of a slice whose devices no single node holds.
_NOT_NODE_LOCAL = ("nodeSelector", "allNodes", "perDeviceNodeSelection")


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, short = name.rpartition("/")
    return (domain, short) if sep else (driver, name)


def _attribute(raw: Any) -> AttributeValue | None:
    if not isinstance(raw, dict):
        return None
    for key in ("int", "bool", "string"):
        value = raw.get(key)
        if key == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if key == "bool" and isinstance(value, bool):
            return value
        if key == "string" and isinstance(value, str):
            return value
    return None  # a version (semver) or an unknown kind: not offered to CEL


def _device(raw: Mapping[str, Any], driver: str, where: str) -> Device:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{where}: a device without a name")
    body = _map(raw, "basic") or raw  # v1beta1 wrapped a device's fields in ``basic``
    attributes: dict[str, dict[str, AttributeValue]] = {}
    for key, value in _map(body, "attributes").items():
        parsed = _attribute(value)
        if parsed is not None:
            domain, short = _split(str(key), driver)
            attributes.setdefault(domain, {})[short] = parsed
    capacity: dict[str, dict[str, int]] = {}
    for key, value in _map(body, "capacity").items():
        amount = value.get("value") if isinstance(value, dict) else None
        if amount is None:
            continue
        try:
            milli = milli_value(parse_quantity(amount, f"{where}: device {name} capacity {key}"))
        except QuantityError as exc:
            raise ConversionError(str(exc)) from exc
        domain, short = _split(str(key), driver)
        capacity.setdefault(domain, {})[short] = milli
    return Device(
        name=name,
        attributes=attributes,
        capacity=capacity,
        consumes_counters=bool(_list(body, "consumesCounters")),
        binding_conditions=bool(_list(body, "bindingConditions")),
    )


def resource_slice_to_info(obj: Mapping[str, Any]) -> ResourceSliceInfo:
    _, name = object_name(obj, "ResourceSlice")
    where = f"ResourceSlice {name}"
    spec = _map(obj, "spec")
    driver = spec.get("driver")
    if not isinstance(driver, str) or not driver:
        raise ConversionError(f"{where}: spec.driver is required")
    pool = _map(spec, "pool")
    node_name = spec.get("nodeName")
    node_local = isinstance(node_name, str) and bool(node_name)
    if not node_local and not any(spec.get(k) for k in _NOT_NODE_LOCAL):
        raise ConversionError(f"{where}: names neither a node nor a node selection")
    return ResourceSliceInfo(
        name=name,
        driver=driver,
        pool=str(pool.get("name") or ""),
        generation=_int_field(pool.get("generation"), f"{where}: spec.pool.generation", 0),
        slice_count=_int_field(
            pool.get("resourceSliceCount"), f"{where}: spec.pool.resourceSliceCount", 1
        ),
        node_name=node_name if node_local and isinstance(node_name, str) else "",
        devices=tuple(
            _device(d, driver, where) for d in _list(spec, "devices") if isinstance(d, dict)
        ),
        shared_counters=bool(_list(spec, "sharedCounters")),
    )


def device_class_to_info(obj: Mapping[str, Any]) -> DeviceClassInfo:
    _, name = object_name(obj, "DeviceClass")
    meta = _map(obj, "metadata")
    spec = _map(obj, "spec")
    selectors = tuple(
        str(_map(s, "cel").get("expression") or "")
        for s in _list(spec, "selectors")
        if isinstance(s, dict) and _map(s, "cel")
    )
    return DeviceClassInfo(
        name=name,
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        selectors=selectors,
        extended_resource_name=str(spec.get("extendedResourceName") or ""),
    )
