"""kube-scheduler's extender wire format (`k8s.io/kube-scheduler/extender/v1`).

Those Go structs have no JSON tags, so kube-scheduler writes PascalCase keys, sends `null`
for the unused alternative (`Nodes` vs `NodeNames`, `NodeNameToVictims` vs
`NodeNameToMetaVictims`) and decodes answers case-insensitively. We mirror Go both ways:
keys in are matched like Go's decoder (exact, else case-folded; unknown keys ignored; the
last duplicate wins), keys out are exactly what `json.Marshal` writes.

The hot path decodes a request once, with msgspec, straight into the shape the verbs hand the
engine: the pod as the decoded Kubernetes JSON, the node names checked as strings and the
victims' UIDs read while parsing, in C. That typed decoder takes only what kube-scheduler's
`json.Marshal` writes (the exact keys, each value of its type); anything else, a case-folded
key, a wrong type or malformed JSON, is decoded again the generic way (orjson, then Go's
key matching by hand), which accepts what Go accepts and says in one sentence what is wrong.
Answers are encoded with orjson. The pydantic models of `schema.py` only document the wire
in the OpenAPI schema and are never used to parse or encode a request (FastAPI's encoder
costs ~15x more on a 5,000-name answer).
Embedded Kubernetes objects (the Pod, Nodes, victim Pods) are passed through as sent, since
kube-scheduler always writes them in their canonical camelCase form.
"""

from __future__ import annotations

import json
import operator
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec
import orjson

from app.http.errors import WireError, one_line
from scheduler_core.extender.decisions import FilterResult, NodeVictims
from scheduler_core.extender.prioritize import MAX_EXTENDER_PRIORITY, MIN_EXTENDER_PRIORITY
from scheduler_core.framework.status import Status

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
MISSING_POD = "missing Pod: the request must carry the pod being scheduled"


@dataclass(slots=True)
class DecodedArgs:
    """A decoded filter/prioritize request.

    `node_items` is not None when the request carried full Node objects (the extender is
    configured `nodeCacheCapable: false`), and filter then answers with `Nodes`;
    `names_given` is true when it carried `NodeNames`, and filter then answers with names.
    `node_names` is the input node set: `NodeNames` when given, else the items' names; a
    tuple, which may be the very one an earlier request with the same list was given
    (``OfferedNames``): never changed.
    """

    pod: dict[str, Any]
    node_names: tuple[str, ...]
    node_items: list[dict[str, Any]] | None
    item_names: tuple[str, ...]
    names_given: bool
    #: The request's ``NodeNames`` array as it was sent, when decoded from it alone (the
    #: typed path): an answer passing every name sends it back as it came. How the names
    #: were written, not what they are: left out of comparisons.
    names_json: bytes | None = field(default=None, compare=False)


@dataclass(slots=True)
class DecodedPreemptionArgs:
    """A decoded preempt request: candidate node -> proposed victim UIDs (maybe empty)."""

    pod: dict[str, Any]
    candidates: dict[str, list[str]]
    pdb_violations: dict[str, int]


class _WireArgs(msgspec.Struct, forbid_unknown_fields=True):
    """``ExtenderArgs`` exactly as kube-scheduler writes it; ``Nodes`` (full Node objects, the
    rare ``nodeCacheCapable: false`` set-up) is checked by hand afterwards."""

    Pod: dict[str, Any] | None = None
    Nodes: dict[str, Any] | None = None
    #: Kept as its raw JSON (``null`` when absent) and decoded by ``OfferedNames``, which
    #: decodes a list offered again only once.
    NodeNames: msgspec.Raw = msgspec.Raw(b"null")


_UID = Annotated[str, msgspec.Meta(min_length=1)]
_I64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _WireMetaPod(msgspec.Struct, forbid_unknown_fields=True):
    UID: _UID


class _WireMetaVictims(msgspec.Struct, forbid_unknown_fields=True):
    Pods: list[_WireMetaPod] | None = None
    NumPDBViolations: _I64 | None = None


class _WirePreemptionArgs(msgspec.Struct, forbid_unknown_fields=True):
    """``ExtenderPreemptionArgs`` in the node-cache form kube-scheduler sends; the
    full-object form (``NodeNameToVictims``) takes the generic way."""

    Pod: dict[str, Any] | None = None
    NodeNameToVictims: None = None
    NodeNameToMetaVictims: dict[str, _WireMetaVictims | None] | None = None


_ARGS_DECODER = msgspec.json.Decoder(_WireArgs)
_NAMES_DECODER = msgspec.json.Decoder(tuple[str, ...])
_NULL = msgspec.Raw(b"null")
_PREEMPTION_DECODER = msgspec.json.Decoder(_WirePreemptionArgs)


def _keys(*names: str) -> dict[str, str]:
    table = {name.casefold(): name for name in names}
    table.update({name: name for name in names})
    return table


_ARGS_KEYS = _keys("Pod", "Nodes", "NodeNames")
_PREEMPT_KEYS = _keys("Pod", "NodeNameToVictims", "NodeNameToMetaVictims")
_VICTIMS_KEYS = _keys("Pods", "NumPDBViolations")
_META_POD_KEYS = _keys("UID")
_LIST_KEYS = _keys("items", "metadata")
_OBJECT_KEYS = _keys("metadata")
_META_KEYS = _keys("name", "uid")


def go_fields(obj: Mapping[str, Any], table: Mapping[str, str]) -> dict[str, Any]:
    """The known fields of a JSON object, matched to their canonical names as Go does.

    Go's decoder tries the exact field name, then a case-insensitive match (Unicode simple
    folding, hence `casefold`: `ſ` matches `s`); keys matching no field are ignored, and a
    field given twice keeps the last value.
    """
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = table.get(key)
        if name is None:
            name = table.get(key.casefold())
            if name is None:
                continue
        out[name] = value
    return out


def _load_object(body: bytes, what: str) -> dict[str, Any]:
    if not body:
        raise WireError(f"empty request body: expected a JSON {what} object")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"malformed JSON: {one_line(str(exc))}") from None
    if not isinstance(doc, dict):
        raise WireError(f"request body must be a JSON {what} object, got {_kind(doc)}")
    return doc


def _pod(fields: Mapping[str, Any]) -> dict[str, Any]:
    pod = fields.get("Pod")
    if pod is None:
        raise WireError(MISSING_POD)
    if not isinstance(pod, dict):
        raise WireError(f"Pod must be a JSON object, got {_kind(pod)}")
    return pod


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number"
    )


def _meta_field(obj: Any, field: str, where: str) -> str:
    if not isinstance(obj, dict):
        raise WireError(f"{where} must be a JSON object, got {_kind(obj)}")
    meta = go_fields(obj, _OBJECT_KEYS).get("metadata")
    value = go_fields(meta, _META_KEYS).get(field) if isinstance(meta, dict) else None
    if not isinstance(value, str) or not value:
        raise WireError(f"{where} has no metadata.{field}")
    return value


def _all_strings(items: Sequence[Any]) -> bool:
    """Whether every item is a ``str``: ``str.join`` checks each item's type in C on the way,
    a third of the cost of collecting the set of types over 5,000 names."""
    try:
        "".join(items)
    except TypeError:
        return False
    return True


class OfferedNames:
    """The node-name lists of the last requests, decoded: each list's raw JSON -> its names.

    kube-scheduler offers every feasible node for each pod, mostly in the order of the pod
    before (its parallel filters only now and then finish in another order): two requests
    in three at 200 nodes, one in four at 1,000, carry the same list as the request before,
    and more the same as one a few requests back. Such a list is decoded once, and handed
    out again as the same tuple, which the engine then recognises without checking each
    name against its cache (``scheduler_core.cache.known_offers``). A list is found by its
    CRC-32 and length and taken only if its bytes are equal; at most ``entries`` lists and
    ``max_bytes`` of their JSON are kept, the least recently offered dropped first. A list
    kept costs about five times its JSON (its names as strings, the tuple): at 5,000 nodes
    ~75 KB of JSON, ~0.4 MB in all, so the 16 lists of a handler hold ~6 MB. A list not
    kept is decoded by the backend's own decoder first (``known``), which hands out its
    cache's name strings and vouches for the list; then as any JSON."""

    __slots__ = ("_bytes", "_known", "_lists", "entries", "hits", "max_bytes")

    def __init__(
        self,
        entries: int = 16,
        max_bytes: int = 4 << 20,
        known: Callable[[bytes], tuple[str, ...] | None] | None = None,
    ) -> None:
        """``known``: the backend's decoder of a list into its own name strings
        (``ExtenderBackend.decode_offered_names``), tried before the plain decoder."""
        self.entries = entries
        self.max_bytes = max_bytes
        self._known = known
        self._lists: OrderedDict[tuple[int, int], tuple[bytes, tuple[str, ...]]] = OrderedDict()
        self._bytes = 0
        #: Lists handed out again (read by the tests; no metric is kept).
        self.hits = 0

    def names(self, data: bytes) -> tuple[str, ...]:
        """The names of ``data`` (a JSON array). Raises ``msgspec.MsgspecError`` for anything
        but an array of strings, and keeps nothing then."""
        key = (zlib.crc32(data), len(data))
        lists = self._lists
        kept = lists.get(key)
        if kept is not None and kept[0] == data:
            lists.move_to_end(key)
            self.hits += 1
            return kept[1]
        names = self._known(data) if self._known is not None else None
        if names is None:
            names = _NAMES_DECODER.decode(data)
        if kept is not None:  # another list with the same CRC and length: replaced
            self._bytes -= len(kept[0])
        lists[key] = (data, names)
        lists.move_to_end(key)
        self._bytes += len(data)
        while lists and (len(lists) > self.entries or self._bytes > self.max_bytes):
            _, (dropped, _names) = lists.popitem(last=False)
            self._bytes -= len(dropped)
        return names

    def __len__(self) -> int:
        return len(self._lists)


def parse_extender_args(body: bytes, offered: OfferedNames | None = None) -> DecodedArgs:
    """Decode an `ExtenderArgs` (the filter and prioritize request); its node names through
    ``offered`` when given (a handler's own: see ``OfferedNames``)."""
    try:
        wire = _ARGS_DECODER.decode(body)
        raw = wire.NodeNames
        given = not (len(raw) == 4 and raw == _NULL)
        data = bytes(raw) if given else None
        if data is None:
            names: tuple[str, ...] | None = None
        elif offered is not None:
            names = offered.names(data)
        else:
            names = _NAMES_DECODER.decode(data)
    except (msgspec.MsgspecError, RecursionError):  # nested past its depth: orjson says so
        return parse_extender_args_generic(body)
    if wire.Nodes is not None:
        return _extender_args({"Pod": wire.Pod, "Nodes": wire.Nodes, "NodeNames": names})
    pod = wire.Pod
    if pod is None:
        raise WireError(MISSING_POD)
    return DecodedArgs(
        pod=pod,
        node_names=names if names is not None else (),
        node_items=None,
        item_names=(),
        names_given=names is not None,
        names_json=data,
    )


def parse_extender_args_generic(body: bytes) -> DecodedArgs:
    """``parse_extender_args`` for any body the typed decoder refused: Go's key matching,
    and the sentence saying what is wrong."""
    return _extender_args(go_fields(_load_object(body, "ExtenderArgs"), _ARGS_KEYS))


def _extender_args(fields: Mapping[str, Any]) -> DecodedArgs:
    pod = _pod(fields)
    raw_names = fields.get("NodeNames")
    names: tuple[str, ...] = ()
    if raw_names is not None:
        if not isinstance(raw_names, list | tuple) or not _all_strings(raw_names):
            raise WireError("NodeNames must be an array of strings or null")
        names = tuple(raw_names)
    items: list[dict[str, Any]] | None = None
    item_names: tuple[str, ...] = ()
    raw_nodes = fields.get("Nodes")
    if raw_nodes is not None:
        if not isinstance(raw_nodes, dict):
            raise WireError(f"Nodes must be a NodeList object or null, got {_kind(raw_nodes)}")
        raw_items = go_fields(raw_nodes, _LIST_KEYS).get("items")
        if raw_items is None:
            raw_items = []
        if not isinstance(raw_items, list):
            raise WireError(f"Nodes.items must be an array, got {_kind(raw_items)}")
        item_names = tuple(
            _meta_field(n, "name", f"Nodes.items[{i}]") for i, n in enumerate(raw_items)
        )
        items = raw_items
        if raw_names is None:
            names = item_names
    return DecodedArgs(
        pod=pod,
        node_names=names,
        node_items=items,
        item_names=item_names,
        names_given=raw_names is not None,
    )


def _pdb_violations(value: Any, node: str) -> int:
    if value is None:
        return 0
    # JSON Schema (and so the OpenAPI document) counts 3.0 as an integer; Go would not. Be
    # lenient with integral floats, but only where a float is exact (a huge number decoded
    # as a float may have been rounded into range).
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not _I64_MIN <= value <= _I64_MAX:
        raise WireError(f"NumPDBViolations of node {node!r} must be a 64-bit integer")
    return value


def _victim_list(node: str, victims: Any, field: str) -> tuple[list[Any], int]:
    if victims is None:
        return [], 0
    if not isinstance(victims, dict):
        raise WireError(f"{field}[{node!r}] must be an object, got {_kind(victims)}")
    fields = go_fields(victims, _VICTIMS_KEYS)
    pods = fields.get("Pods")
    if pods is None:
        pods = []
    if not isinstance(pods, list):
        raise WireError(f"{field}[{node!r}].Pods must be an array, got {_kind(pods)}")
    return pods, _pdb_violations(fields.get("NumPDBViolations"), node)


def _meta_uid(pod: Any, where: str) -> str:
    if not isinstance(pod, dict):
        raise WireError(f"{where} must be an object, got {_kind(pod)}")
    uid = go_fields(pod, _META_POD_KEYS).get("UID")
    if not isinstance(uid, str) or not uid:
        raise WireError(f"{where} has no UID")
    return uid


def _meta_uids(pods: list[Any], where: str) -> list[str]:
    """The UIDs of ``MetaPod`` entries; kube-scheduler sends each as exactly ``{"UID": ...}``,
    which is read directly (a thousand per preempt call), anything else as Go would."""
    uids: list[str] = []
    for i, pod in enumerate(pods):
        uid = pod.get("UID") if type(pod) is dict and len(pod) == 1 else None
        uids.append(uid if type(uid) is str and uid else _meta_uid(pod, f"{where}[{i}]"))
    return uids


def _pod_uids(pods: list[Any], where: str) -> list[str]:
    return [_meta_field(p, "uid", f"{where}[{i}]") for i, p in enumerate(pods)]


def _victims_map(
    source: Any, field: str, uids_of: Callable[[list[Any], str], list[str]]
) -> tuple[dict[str, list[str]], dict[str, int]]:
    if not isinstance(source, dict):
        raise WireError(f"{field} must be an object, got {_kind(source)}")
    candidates: dict[str, list[str]] = {}
    pdb: dict[str, int] = {}
    for node, victims in source.items():
        pods, pdb[node] = _victim_list(node, victims, field)
        candidates[node] = uids_of(pods, f"{field}[{node!r}].Pods")
    return candidates, pdb


def parse_preemption_args(body: bytes) -> DecodedPreemptionArgs:
    """Decode an `ExtenderPreemptionArgs`, in either node-cache or full-object form.

    When both maps are present (kube-scheduler never sends both) both are validated and the
    node-cache one is used.
    """
    try:
        wire = _PREEMPTION_DECODER.decode(body)
    except (msgspec.MsgspecError, RecursionError):  # nested past its depth: orjson says so
        return parse_preemption_args_generic(body)
    pod = wire.Pod
    if pod is None:
        raise WireError(MISSING_POD)
    candidates: dict[str, list[str]] = {}
    pdb: dict[str, int] = {}
    for node, victims in (wire.NodeNameToMetaVictims or {}).items():
        if victims is None:
            candidates[node], pdb[node] = [], 0
            continue
        pods = victims.Pods
        candidates[node] = [p.UID for p in pods] if pods is not None else []
        violations = victims.NumPDBViolations
        pdb[node] = violations if violations is not None else 0
    return DecodedPreemptionArgs(pod=pod, candidates=candidates, pdb_violations=pdb)


def parse_preemption_args_generic(body: bytes) -> DecodedPreemptionArgs:
    """``parse_preemption_args`` for any body the typed decoder refused (or the full-object
    form): Go's key matching, and the sentence saying what is wrong."""
    fields = go_fields(_load_object(body, "ExtenderPreemptionArgs"), _PREEMPT_KEYS)
    pod = _pod(fields)
    candidates: dict[str, list[str]] = {}
    pdb: dict[str, int] = {}
    full = fields.get("NodeNameToVictims")
    if full is not None:
        candidates, pdb = _victims_map(full, "NodeNameToVictims", _pod_uids)
    meta = fields.get("NodeNameToMetaVictims")
    if meta is not None:
        candidates, pdb = _victims_map(meta, "NodeNameToMetaVictims", _meta_uids)
    return DecodedPreemptionArgs(pod=pod, candidates=candidates, pdb_violations=pdb)


def parse_pod(body: bytes) -> dict[str, Any]:
    """Decode a bare Pod object (POST /debug/explain)."""
    return _load_object(body, "Pod")


def split_failed(failed: Mapping[str, Status]) -> tuple[dict[str, str], dict[str, str]]:
    """Rejected nodes as kube-scheduler reads them: ``FailedNodes`` (evictions may help, so
    they stay preemption candidates) and ``FailedAndUnresolvableNodes`` (everything else),
    each with its reasons in one line. The one place a status code becomes a wire field."""
    resolvable: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    if not failed:
        return resolvable, unresolvable  # most answers: every node passed
    # Most answers refuse every node, or every node outside a gang's domain, with one Status
    # object: then the whole map is built in C, with the message joined once, instead of
    # per node (at 5,000 nodes the per-node loop was most of encoding such an answer).
    statuses = dict(zip(map(id, failed.values()), failed.values(), strict=True))
    if len(statuses) == 1:
        (only,) = statuses.values()
        every = dict.fromkeys(failed, only.message)
        return (every, unresolvable) if only.resolvable else (resolvable, every)
    said = {key: (s.resolvable, s.message) for key, s in statuses.items()}
    for node, status in failed.items():
        ok, message = said[id(status)]
        (resolvable if ok else unresolvable)[node] = message
    return resolvable, unresolvable


def encode_filter_result(args: DecodedArgs, result: FilterResult) -> bytes:
    """An `ExtenderFilterResult` in the form that was asked (names, Node objects, or both).
    An error answer is ``encode_filter_error``'s: it names no node at all."""
    passed = result.passed
    failed, unresolvable = split_failed(result.failed)
    nodes: dict[str, Any] | None = None
    if args.node_items is not None:
        if passed == args.item_names:
            kept = args.node_items
        else:
            passing = set(passed)
            pairs = zip(args.node_items, args.item_names, strict=True)
            kept = [item for item, name in pairs if name in passing]
        nodes = {"metadata": {}, "items": kept}
    names: Any = passed
    if passed is args.node_names and args.names_json is not None:
        names = orjson.Fragment(args.names_json)  # every name passed: the list as it came
    answer = {
        "Nodes": nodes,
        "NodeNames": names if args.names_given or nodes is None else None,
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": "",
    }
    try:
        return orjson.dumps(answer)
    except orjson.JSONEncodeError:
        if nodes is None:
            raise
    # A Node object sent back as it came may hold a JSON integer beyond 64 bits, which
    # Python decoded and orjson will not write (kube-scheduler never sends one; a hand-made
    # request may). The standard library writes any integer: the objects go back unchanged.
    if isinstance(names, orjson.Fragment):
        names = list(passed)
        answer["NodeNames"] = names if args.names_given else None
    return json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()


def encode_filter_error(message: str) -> bytes:
    """A filter answer that kube-scheduler reads as an error (non-empty `Error`)."""
    return orjson.dumps(
        {
            "Nodes": None,
            "NodeNames": None,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": one_line(message),
        }
    )


def encode_host_priorities(node_names: Iterable[str], scores: Mapping[str, int]) -> bytes:
    """A `HostPriorityList`: one entry per input node, in input order, unscored nodes 0."""
    return orjson.dumps([{"Host": n, "Score": scores.get(n, 0)} for n in node_names])


def encode_host_score_array(node_names: list[str], scores: Sequence[int]) -> bytes:
    """A `HostPriorityList` from scores already in input order and range, in one pass."""
    return orjson.dumps([{"Host": n, "Score": s} for n, s in zip(node_names, scores, strict=True)])


_SCORE_TAILS = {
    score: b"%d}" % score for score in range(MIN_EXTENDER_PRIORITY, MAX_EXTENDER_PRIORITY + 1)
}


class HostScoreEncoder:
    """``encode_host_score_array``'s bytes, without a dict per node.

    Each node's ``{"Host":"<name>","Score":`` is encoded once, by orjson (so escaped exactly
    as the dict path escapes it), and kept; an answer is then joined from those pieces and
    one of eleven score endings, in C. At 5,000 nodes the dicts cost ~0.57 ms a request and
    were most of what the garbage collector was woken for on this path. The pieces are
    forgotten wholesale past ``limit`` names (node names come and go slowly). Scores are
    plain ints, as ``ndarray.tolist`` gives them; anything outside 0..10 takes the dict
    path. One per prioritize endpoint: it is used from the event loop's thread only."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self._heads: dict[str, bytes] = {}

    def __call__(self, node_names: list[str], scores: Sequence[int]) -> bytes:
        if len(node_names) != len(scores):
            raise ValueError(f"{len(node_names)} node names but {len(scores)} scores")
        heads = self._heads
        try:
            pieces = list(map(heads.__getitem__, node_names))
        except KeyError:
            if len(heads) + len(node_names) > self.limit:
                heads.clear()
            for name in node_names:
                if name not in heads:
                    heads[name] = b'{"Host":' + orjson.dumps(name) + b',"Score":'
            pieces = list(map(heads.__getitem__, node_names))
        try:
            tails = list(map(_SCORE_TAILS.__getitem__, scores))
        except (KeyError, TypeError):  # not an int within 0..10: the general path
            return encode_host_score_array(node_names, scores)
        return b"[" + b",".join(map(operator.add, pieces, tails)) + b"]"


def encode_zero_priorities(node_names: Iterable[str]) -> bytes:
    return orjson.dumps([{"Host": n, "Score": 0} for n in node_names])


def encode_preemption_result(victims: Mapping[str, NodeVictims]) -> bytes:
    """An `ExtenderPreemptionResult`; always `NodeNameToMetaVictims`, as the client expects."""
    return orjson.dumps(
        {
            "NodeNameToMetaVictims": {
                node: {
                    "Pods": [{"UID": uid} for uid in v.uids],
                    "NumPDBViolations": v.num_pdb_violations,
                }
                for node, v in victims.items()
            }
        }
    )
