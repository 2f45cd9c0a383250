"""DRA devices as the engine counts them: ResourceSlices, DeviceClasses, and the CEL
selectors that decide which devices a class (or a request) means.

A queue's share of GPUs published through Dynamic Resource Allocation is a count of
devices: a node holds, per device class, as many as its ResourceSlices publish devices the
class's selectors accept. The selectors are CEL expressions; they are compiled and run by
Google's CEL implementation, in an environment shaped like the one kube-scheduler gives them
(``device.driver``, ``device.attributes["domain"].name``, ``device.capacity["domain"].name``).

What the engine cannot reproduce exactly is *not evaluable*, with a reason, and never
counted as zero devices or as all of them:

- an expression that does not compile here (a function of Kubernetes' CEL library this
  environment lacks, such as ``semver``), or whose result is not a bool;
- an evaluation error on any device of the node (kube-scheduler aborts the allocation on
  such an error, so no count of the node's devices is the one it would use).

Quantities (``device.capacity``) are exact integers in thousandths of a unit, so comparing
them (``compareTo``, ``isGreaterThan``, ``isLessThan``, ``==``) gives Kubernetes' answer;
their arithmetic (``add``, ``sub``) is not offered, and an expression using it is not
evaluable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import cel_expr_python.cel as cel

from scheduler_core.api.quantity import QuantityError, milli_value, parse_quantity

#: The scalar resource a DRA device of class ``<name>`` counts as when the configuration
#: maps the class to no other name: the name Kubernetes itself gives a device class's
#: implicit extended resource (and Volcano's queue keys use).
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


def device_class_resource(device_class: str) -> str:
    return f"{DEVICE_CLASS_RESOURCE_PREFIX}{device_class}"


@dataclass(frozen=True, slots=True)
class DeviceQuotaNames:
    """Which quota resource name a device class counts under.

    In order: the class's ``spec.extendedResourceName`` (pods ask for that name in their
    requests and kube-scheduler makes the claim: their charge is under that name, so the
    devices must be too), then the configuration's mapping (``deviceClassMappings``: several
    classes may share a name, e.g. a DRA GPU class and the device plugin's
    ``nvidia.com/gpu``), then Kubernetes' implicit ``deviceclass.resource.kubernetes.io/<class>``.
    """

    mappings: Mapping[str, str] = field(default_factory=dict)

    def name_of(self, device_class: str, info: DeviceClassInfo | None = None) -> str:
        if info is not None and info.extended_resource_name:
            return info.extended_resource_name
        mapped = self.mappings.get(device_class)
        if mapped:
            return mapped
        return device_class_resource(device_class)


#: A device attribute's value as CEL sees it (a version attribute is not offered).
AttributeValue = int | bool | str


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a ResourceSlice, reduced to what selectors and counting read."""

    name: str
    #: Attributes by domain, then name (an unqualified attribute is in its driver's domain).
    attributes: Mapping[str, Mapping[str, AttributeValue]] = field(default_factory=dict)
    #: Capacities by domain, then name, in thousandths of a unit.
    capacity: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: The device consumes shared counters (a partition of a partitionable device): which
    #: partitions can be allocated together depends on counters the engine does not model.
    consumes_counters: bool = False
    #: The device is ready only after binding conditions are met.
    binding_conditions: bool = False
    #: The device has taints (which pods tolerating them may still get).
    tainted: bool = False
    #: The device may be allocated to several claims at once (consumable capacity).
    shared: bool = False


@dataclass(frozen=True, slots=True)
class ResourceSliceInfo:
    """``resource.k8s.io/v1`` ResourceSlice: a part of one driver's pool of devices."""

    name: str
    driver: str
    pool: str
    generation: int
    #: ``pool.resourceSliceCount``: how many slices of this generation make the pool whole.
    slice_count: int
    #: The node whose devices these are; empty for devices reachable from several nodes
    #: (``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``), which no node counts.
    node_name: str
    devices: tuple[Device, ...] = ()
    #: ``spec.sharedCounters`` present: the pool has partitionable devices.
    shared_counters: bool = False


@dataclass(frozen=True, slots=True)
class DeviceClassInfo:
    """``resource.k8s.io/v1`` DeviceClass, with what identifies its version: a selector is
    compiled once per (uid, resourceVersion)."""

    name: str
    uid: str = ""
    resource_version: str = ""
    #: The CEL expressions of ``spec.selectors`` (all must accept a device).
    selectors: tuple[str, ...] = ()
    #: ``spec.extendedResourceName``: pods asking for this extended resource get a claim of
    #: this class, created by kube-scheduler.
    extended_resource_name: str = ""

    @property
    def version_key(self) -> tuple[str, str, str]:
        return (self.name, self.uid, self.resource_version)


#: A device's identity in the cluster: (driver, pool, device name).
DeviceId = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One request of a claim, of a shape the engine judges: ``exactly`` one class, its own
    selectors, ``ExactCount`` (``count`` devices) or ``All`` (every matching device of the
    node)."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    all_devices: bool = False
    count: int = 1


@dataclass(frozen=True, slots=True)
class ClaimShape:
    """What a ResourceClaim (or a template's claim) asks for, or why the engine does not
    judge it (``unjudged``: prioritized lists, admin access, constraints across requests,
    consumable capacity)."""

    requests: tuple[DeviceRequest, ...] = ()
    unjudged: str = ""

    def exact_counts(self) -> dict[str, int]:
        """Devices per class of the ``ExactCount`` requests: the claim's charge before it is
        allocated (``All`` requests depend on the node, and are charged once allocated)."""
        out: dict[str, int] = {}
        for request in self.requests:
            if not request.all_devices:
                out[request.device_class] = out.get(request.device_class, 0) + request.count
        return out


# --- CEL -----------------------------------------------------------------------------------

_T = cel.Type
#: ``device.attributes["dom"]`` / ``device.capacity["dom"]`` with a literal domain: a domain
#: the device does not have reads as an empty map, as in Kubernetes.
_DOMAIN_LOOKUP = re.compile(r"""\b(attributes|capacity)\s*\[\s*(?:"([^"]*)"|'([^']*)')\s*\]""")


def _compare(a: int, b: int) -> int:
    return (a > b) - (a < b)


def _quantity(text: str) -> int:
    try:
        return milli_value(parse_quantity(text))
    except QuantityError as exc:
        raise ValueError(str(exc)) from exc


def _is_quantity(text: str) -> bool:
    try:
        _quantity(text)
    except ValueError:
        return False
    return True


def _as_integer(milli: int) -> int:
    if milli % 1000:
        raise ValueError("quantity is not an integer")
    return milli // 1000


def _functions() -> list[Any]:
    """Kubernetes' quantity library, over quantities held as integer thousandths."""
    i, s, b, d = _T.INT, _T.STRING, _T.BOOL, _T.DOUBLE

    def member(name: str, ret: Any, params: list[Any], impl: Any) -> Any:
        return cel.FunctionDecl(
            name, [cel.Overload(f"quantity_{name}", ret, params, is_member=True, impl=impl)]
        )

    def glob(name: str, ret: Any, params: list[Any], impl: Any) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(f"{name}_string", ret, params, impl=impl)])

    return [
        glob("quantity", i, [s], _quantity),
        glob("isQuantity", b, [s], _is_quantity),
        member("compareTo", i, [i, i], _compare),
        member("isGreaterThan", b, [i, i], lambda a, c: a > c),
        member("isLessThan", b, [i, i], lambda a, c: a < c),
        member("sign", i, [i], lambda a: _compare(a, 0)),
        member("isInteger", b, [i], lambda a: a % 1000 == 0),
        member("asInteger", i, [i], _as_integer),
        member("asApproximateFloat", d, [i], lambda a: a / 1000),
    ]


class SelectorError(Exception):
    """A selector that cannot be compiled or evaluated here; the message says why."""


@dataclass(frozen=True, slots=True)
class CompiledSelector:
    expression: str
    program: Any
    #: Domains the expression looks up by a literal name (filled with empty maps).
    domains: tuple[tuple[str, str], ...]


class CelEnvironment:
    """One CEL environment with the ``device`` variable and the quantity functions.

    Building it costs milliseconds, so its owner (the device catalog) keeps one for its
    lifetime; compiled programs are kept by whoever owns the objects they came from.
    """

    def __init__(self) -> None:
        self._env = cel.NewEnv(
            variables={"device": _T.Map(_T.STRING, _T.DYN)}, functions=_functions()
        )

    def compile(self, expression: str) -> CompiledSelector:
        """Compile and type-check ``expression``; raises ``SelectorError``."""
        try:
            program = self._env.compile(expression)
        except RuntimeError as exc:
            raise SelectorError(_first_line(str(exc))) from exc
        ret = program.return_type()
        if ret != _T.BOOL and ret != _T.DYN:
            raise SelectorError(f"the expression gives {ret.name()}, not a bool")
        found = _DOMAIN_LOOKUP.finditer(expression)
        domains = tuple(sorted({(m.group(1), m.group(2) or m.group(3) or "") for m in found}))
        return CompiledSelector(expression, program, domains)

    def matches(self, selector: CompiledSelector, driver: str, device: Device) -> bool:
        """Whether ``selector`` accepts ``device``; raises ``SelectorError`` on an
        evaluation error or a result that is not a bool (kube-scheduler aborts then)."""
        attributes: dict[str, Mapping[str, AttributeValue]] = dict(device.attributes)
        capacity: dict[str, Mapping[str, int]] = dict(device.capacity)
        for kind, domain in selector.domains:
            (attributes if kind == "attributes" else capacity).setdefault(domain, {})
        data = {
            "device": {
                "driver": driver,
                "attributes": attributes,
                "capacity": capacity,
                "allowMultipleAllocations": False,
            }
        }
        try:
            result = selector.program.eval(data=data)
        except RuntimeError as exc:
            raise SelectorError(_first_line(str(exc))) from exc
        value = result.value()
        if result.type() != _T.BOOL or not isinstance(value, bool):
            raise SelectorError(f"{selector.expression!r} on device {device.name}: {value}")
        return value


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown CEL error"


def all_match(
    env: CelEnvironment, selectors: Iterable[CompiledSelector], driver: str, device: Device
) -> bool:
    return all(env.matches(s, driver, device) for s in selectors)


# --- the catalog ---------------------------------------------------------------------------

#: How many (slice, request) match results a catalog keeps before starting afresh.
_REQUEST_MATCHES_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class Unjudged:
    """A count the engine cannot give, and why."""

    reason: str


#: A node's devices of one class: how many, or why that cannot be said.
DeviceCount = int | Unjudged


class DeviceCatalog:
    """ResourceSlices and DeviceClasses as the cache follows them, and the counts derived
    from them.

    It owns its CEL environment and two caches that follow the objects' versions: a class's
    compiled selectors per (name, uid, resourceVersion), and which devices of a slice a
    class accepts per (slice put, class version). A slice or class put anew drops only its
    own entries, so a watch event costs the evaluation of what it changed.
    """

    def __init__(self) -> None:
        self.slices: dict[str, ResourceSliceInfo] = {}
        self.classes: dict[str, DeviceClassInfo] = {}
        self._env: CelEnvironment | None = None
        self._compiled: dict[tuple[str, str, str], tuple[CompiledSelector, ...] | Unjudged] = {}
        self._slice_seq: dict[str, int] = {}
        self._seq = 0
        self._matches: dict[tuple[int, tuple[str, str, str]], frozenset[str] | Unjudged] = {}
        #: Slices by node name, current or not (the pool's generation is judged on reading).
        self._by_node: dict[str, set[str]] = {}
        #: Pools' newest generation: (driver, pool) -> generation -> slice names.
        self._pools: dict[tuple[str, str], dict[int, set[str]]] = {}
        #: Devices allocated to a claim, and the claim's key (``ns/name``).
        self.allocated: dict[DeviceId, str] = {}
        self._claim_devices: dict[str, tuple[DeviceId, ...]] = {}
        #: A claim's (or template's) request selectors, compiled once per object version:
        #: owner key -> (version, request name -> compiled or why not).
        self._request_compiled: dict[
            str, tuple[str, dict[str, tuple[CompiledSelector, ...] | Unjudged]]
        ] = {}
        #: Which devices of a slice a request's own selectors accept (see
        #: ``request_matches``); bounded, as claims come and go.
        self._request_matches: dict[tuple[int, str, str, str], frozenset[str] | Unjudged] = {}

    @property
    def env(self) -> CelEnvironment:
        if self._env is None:
            self._env = CelEnvironment()
        return self._env

    # --- following the objects ---------------------------------------------------------

    def put_slice(self, info: ResourceSliceInfo) -> None:
        self.remove_slice(info.name)
        self._seq += 1
        self.slices[info.name] = info
        self._slice_seq[info.name] = self._seq
        if info.node_name:
            self._by_node.setdefault(info.node_name, set()).add(info.name)
        pool = self._pools.setdefault((info.driver, info.pool), {})
        pool.setdefault(info.generation, set()).add(info.name)

    def remove_slice(self, name: str) -> None:
        old = self.slices.pop(name, None)
        if old is None:
            return
        seq = self._slice_seq.pop(name)
        for key in [k for k in self._matches if k[0] == seq]:
            del self._matches[key]
        if old.node_name:
            names = self._by_node.get(old.node_name, set())
            names.discard(name)
            if not names:
                self._by_node.pop(old.node_name, None)
        pool = self._pools.get((old.driver, old.pool), {})
        gen = pool.get(old.generation, set())
        gen.discard(name)
        if not gen:
            pool.pop(old.generation, None)
        if not pool:
            self._pools.pop((old.driver, old.pool), None)

    def put_class(self, info: DeviceClassInfo) -> None:
        old = self.classes.get(info.name)
        if old is not None and old.version_key != info.version_key:
            self._forget_class(old)
        self.classes[info.name] = info

    def remove_class(self, name: str) -> None:
        old = self.classes.pop(name, None)
        if old is not None:
            self._forget_class(old)

    def _forget_class(self, old: DeviceClassInfo) -> None:
        self._compiled.pop(old.version_key, None)
        for key in [k for k in self._matches if k[1] == old.version_key]:
            del self._matches[key]

    def put_claim_devices(self, key: str, devices: tuple[DeviceId, ...]) -> None:
        """Record the devices an allocated claim holds (none: it holds nothing)."""
        for device_id in self._claim_devices.pop(key, ()):
            if self.allocated.get(device_id) == key:
                del self.allocated[device_id]
        if devices:
            self._claim_devices[key] = devices
            for device_id in devices:
                self.allocated[device_id] = key

    def forget_owner(self, owner: str) -> None:
        """Drop the compiled request selectors of a claim or template that went."""
        self._request_compiled.pop(owner, None)

    def request_selectors(
        self, owner: str, version: str, request: DeviceRequest
    ) -> tuple[CompiledSelector, ...] | Unjudged:
        """``request``'s own selectors, compiled once per version of the object (claim or
        template, ``owner``) it belongs to."""
        entry = self._request_compiled.get(owner)
        if entry is None or entry[0] != version:
            entry = (version, {})
            self._request_compiled[owner] = entry
        found = entry[1].get(request.name)
        if found is None:
            compiled: list[CompiledSelector] = []
            found = tuple(compiled)
            for i, expression in enumerate(request.selectors):
                try:
                    compiled.append(self.env.compile(expression))
                except SelectorError as exc:
                    found = Unjudged(
                        f"{owner}: request {request.name}: selector #{i} does not compile: {exc}"
                    )
                    break
            else:
                found = tuple(compiled)
            entry[1][request.name] = found
        return found

    def request_matches(
        self, info: ResourceSliceInfo, owner: str, version: str, request: DeviceRequest
    ) -> frozenset[str] | Unjudged:
        """The devices of a slice that a request's class and own selectors accept, kept per
        (slice put, class version, request's owner version): a node judged for many pods of
        one template evaluates its devices once."""
        by_class = self._slice_matches(info, request.device_class)
        if isinstance(by_class, Unjudged) or not request.selectors:
            return by_class
        own = self.request_selectors(owner, version, request)
        if isinstance(own, Unjudged):
            return own
        key = (self._slice_seq[info.name], owner, version, request.name)
        cached = self._request_matches.get(key)
        if cached is None:
            names: set[str] = set()
            for device in info.devices:
                if device.name not in by_class:
                    continue
                try:
                    if all_match(self.env, own, info.driver, device):
                        names.add(device.name)
                except SelectorError as exc:
                    cached = Unjudged(
                        f"{owner}: request {request.name} on ResourceSlice {info.name}: {exc}"
                    )
                    break
            else:
                cached = frozenset(names)
            if len(self._request_matches) >= _REQUEST_MATCHES_LIMIT:
                self._request_matches.clear()
            self._request_matches[key] = cached
        return cached

    def node_devices(self, node: str) -> list[tuple[ResourceSliceInfo, Device]]:
        """The node's devices in its pools' newest generation."""
        return [(info, d) for info in self.current_slices(node) for d in info.devices]

    # --- judging ------------------------------------------------------------------------

    def selectors(self, device_class: str) -> tuple[CompiledSelector, ...] | Unjudged:
        """The class's compiled selectors, compiled once per object version."""
        info = self.classes.get(device_class)
        if info is None:
            return Unjudged(f"DeviceClass {device_class} not in the cache")
        cached = self._compiled.get(info.version_key)
        if cached is None:
            cached = self._compile(info)
            self._compiled[info.version_key] = cached
        return cached

    def _compile(self, info: DeviceClassInfo) -> tuple[CompiledSelector, ...] | Unjudged:
        out: list[CompiledSelector] = []
        for i, expression in enumerate(info.selectors):
            try:
                out.append(self.env.compile(expression))
            except SelectorError as exc:
                return Unjudged(f"DeviceClass {info.name}: selector #{i} does not compile: {exc}")
        return tuple(out)

    def class_problem(self, device_class: str) -> str:
        """Why a class cannot be judged at all (empty: it can)."""
        compiled = self.selectors(device_class)
        return compiled.reason if isinstance(compiled, Unjudged) else ""

    def current_slices(self, node: str) -> list[ResourceSliceInfo]:
        """The node's slices of each pool's newest generation (older ones are being
        replaced; kube-scheduler ignores them)."""
        out: list[ResourceSliceInfo] = []
        for name in sorted(self._by_node.get(node, ())):
            info = self.slices[name]
            newest = max(self._pools[(info.driver, info.pool)])
            if info.generation == newest:
                out.append(info)
        return out

    def _slice_matches(
        self, info: ResourceSliceInfo, device_class: str
    ) -> frozenset[str] | Unjudged:
        compiled = self.selectors(device_class)
        if isinstance(compiled, Unjudged):
            return compiled
        key = (self._slice_seq[info.name], self.classes[device_class].version_key)
        cached = self._matches.get(key)
        if cached is None:
            cached = self._evaluate(info, compiled, device_class)
            self._matches[key] = cached
        return cached

    def _evaluate(
        self, info: ResourceSliceInfo, compiled: tuple[CompiledSelector, ...], device_class: str
    ) -> frozenset[str] | Unjudged:
        names: set[str] = set()
        for device in info.devices:
            try:
                if all_match(self.env, compiled, info.driver, device):
                    names.add(device.name)
            except SelectorError as exc:
                return Unjudged(
                    f"DeviceClass {device_class} on ResourceSlice {info.name}: "
                    f"selector cannot be evaluated: {exc}"
                )
        return frozenset(names)

    def matching_devices(
        self, node: str, classes: Iterable[str]
    ) -> frozenset[tuple[str, str, str]] | Unjudged:
        """The node's devices (driver, pool, device name) that any of ``classes`` accepts:
        counted once however many of the classes accept a device."""
        out: set[tuple[str, str, str]] = set()
        for device_class in classes:
            problem = self.class_problem(device_class)
            if problem:
                return Unjudged(problem)
        for info in self.current_slices(node):
            for device_class in classes:
                matched = self._slice_matches(info, device_class)
                if isinstance(matched, Unjudged):
                    return matched
                out.update((info.driver, info.pool, name) for name in matched)
        return frozenset(out)

    def node_count(self, node: str, device_class: str) -> DeviceCount:
        """How many of the node's devices the class accepts."""
        matched = self.matching_devices(node, (device_class,))
        return matched if isinstance(matched, Unjudged) else len(matched)

    def node_resources(
        self, node: str, names: DeviceQuotaNames
    ) -> tuple[dict[str, int], list[Unjudged]]:
        """The node's device counts by quota name, and the classes that cannot be judged
        on it. A device several classes of one name accept counts once under that name; a
        name with a class not judged on the node is left out (never counted as zero or as
        everything) and its reason returned."""
        if node not in self._by_node:
            return {}, []
        by_name: dict[str, list[str]] = {}
        for device_class, info in sorted(self.classes.items()):
            by_name.setdefault(names.name_of(device_class, info), []).append(device_class)
        counts: dict[str, int] = {}
        problems: list[Unjudged] = []
        for name, classes in by_name.items():
            matched = self.matching_devices(node, classes)
            if isinstance(matched, Unjudged):
                problems.append(matched)
            elif matched:
                counts[name] = len(matched)
        return counts, problems

    def nodes(self) -> list[str]:
        return sorted(self._by_node)

    def copy(self) -> DeviceCatalog:
        """A catalog whose objects can change without changing this one's; the compiled
        selectors and match results are shared (they depend only on object versions)."""
        other = DeviceCatalog()
        other._env = self._env
        for info in self.slices.values():
            other.put_slice(info)
        other.classes = dict(self.classes)
        other._compiled = dict(self._compiled)
        other.allocated = dict(self.allocated)
        other._claim_devices = dict(self._claim_devices)
        other._request_compiled = dict(self._request_compiled)
        return other
