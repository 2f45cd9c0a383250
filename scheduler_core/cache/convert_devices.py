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

from scheduler_core.api.devices import (
    AttributeValue,
    ClaimShape,
    Device,
    DeviceClassInfo,
    DeviceRequest,
    ResourceSliceInfo,
)
from scheduler_core.api.quantity import QuantityError, milli_value, parse_quantity
from scheduler_core.api.storage import ResourceClaimInfo, ResourceClaimTemplateInfo
from scheduler_core.cache.convert import (
    ConversionError,
    _int_field,
    _list,
    _map,
    object_name,
    selector_terms,
)

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
        tainted=bool(_list(body, "taints")),
        shared=body.get("allowMultipleAllocations") is True,
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


def claim_shape(spec: Mapping[str, Any]) -> ClaimShape:
    """A ResourceClaim spec's device requests, or why the engine does not judge them."""
    devices = _map(spec, "devices")
    if _list(devices, "constraints"):
        return ClaimShape(unjudged="constraints across its requests (matchAttribute)")
    requests: list[DeviceRequest] = []
    for i, raw in enumerate(_list(devices, "requests")):
        if not isinstance(raw, dict):
            continue
        name = str(raw.get("name") or f"#{i}")
        if _list(raw, "firstAvailable"):
            return ClaimShape(unjudged=f"request {name} is a prioritized list (firstAvailable)")
        exactly = _map(raw, "exactly") or raw  # the pre-v1 shape kept the fields inline
        device_class = exactly.get("deviceClassName")
        if not isinstance(device_class, str) or not device_class:
            return ClaimShape(unjudged=f"request {name} names no device class")
        if exactly.get("adminAccess") is True:
            return ClaimShape(unjudged=f"request {name} asks for admin access")
        if _map(exactly, "capacity"):
            return ClaimShape(unjudged=f"request {name} asks for consumable capacity")
        if _list(exactly, "tolerations"):
            return ClaimShape(unjudged=f"request {name} tolerates device taints")
        mode = str(exactly.get("allocationMode") or "ExactCount")
        if mode not in ("ExactCount", "All"):
            return ClaimShape(unjudged=f"request {name}: allocation mode {mode}")
        count = exactly.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            return ClaimShape(unjudged=f"request {name}: count {count!r}")
        selectors = tuple(
            str(_map(sel, "cel").get("expression") or "")
            for sel in _list(exactly, "selectors")
            if isinstance(sel, dict)
        )
        requests.append(
            DeviceRequest(
                name=name,
                device_class=device_class,
                selectors=selectors,
                all_devices=mode == "All",
                count=1 if mode == "All" else count,
            )
        )
    return ClaimShape(requests=tuple(requests))


def _request_classes(spec: Mapping[str, Any]) -> dict[str, str]:
    """Request name (``req``, or ``req/sub`` for a ``firstAvailable`` alternative) -> the
    device class it asks for."""
    classes: dict[str, str] = {}
    for request in _list(_map(spec, "devices"), "requests"):
        if not isinstance(request, dict):
            continue
        name = str(request.get("name") or "")
        exactly = _map(request, "exactly")
        if exactly.get("deviceClassName"):
            classes[name] = str(exactly["deviceClassName"])
        elif request.get("deviceClassName"):  # the pre-v1 shape, still served by some
            classes[name] = str(request["deviceClassName"])
        for sub in _list(request, "firstAvailable"):
            if isinstance(sub, dict) and sub.get("deviceClassName"):
                classes[f"{name}/{sub.get('name')}"] = str(sub["deviceClassName"])
    return classes


def resource_claim_to_info(claim: Mapping[str, Any]) -> ResourceClaimInfo:
    namespace, name = object_name(claim, "ResourceClaim")
    status = _map(claim, "status")
    allocation = status.get("allocation")
    classes = _request_classes(_map(claim, "spec"))
    devices: dict[str, int] = {}
    held: list[tuple[str, str, str]] = []
    node_selector = None
    if isinstance(allocation, dict):
        for result in _list(_map(allocation, "devices"), "results"):
            if not isinstance(result, dict):
                continue
            held.append(
                (
                    str(result.get("driver") or ""),
                    str(result.get("pool") or ""),
                    str(result.get("device") or ""),
                )
            )
            device_class = classes.get(str(result.get("request") or ""), "")
            if device_class:
                devices[device_class] = devices.get(device_class, 0) + 1
        raw_selector = allocation.get("nodeSelector")
        node_selector = selector_terms(raw_selector) if raw_selector else None
    reserved = tuple(
        str(r.get("uid") or "")
        for r in _list(status, "reservedFor")
        if isinstance(r, dict) and r.get("resource") == "pods"
    )
    meta = _map(claim, "metadata")
    return ResourceClaimInfo(
        namespace=namespace or "default",
        name=name,
        allocated=isinstance(allocation, dict),
        devices=devices,
        reserved_for=reserved,
        node_selector=node_selector,
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        shape=claim_shape(_map(claim, "spec")),
        allocated_devices=tuple(held),
    )


def resource_claim_template_to_info(obj: Mapping[str, Any]) -> ResourceClaimTemplateInfo:
    namespace, name = object_name(obj, "ResourceClaimTemplate")
    meta = _map(obj, "metadata")
    return ResourceClaimTemplateInfo(
        namespace=namespace or "default",
        name=name,
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        shape=claim_shape(_map(_map(obj, "spec"), "spec")),
    )
