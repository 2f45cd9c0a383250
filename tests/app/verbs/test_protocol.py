"""Decoding and encoding of the extender protocol's wire format, without HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.http.errors import WireError
from app.verbs import protocol
from app.verbs.protocol import (
    HostScoreEncoder,
    OfferedNames,
    encode_filter_error,
    encode_filter_result,
    encode_host_priorities,
    encode_host_score_array,
    encode_preemption_result,
    go_fields,
    parse_extender_args,
    parse_extender_args_generic,
    parse_pod,
    parse_preemption_args,
    parse_preemption_args_generic,
)
from scheduler_core.cache.state import ClusterState
from scheduler_core.extender.decisions import FilterResult, NodeVictims
from scheduler_core.framework.status import Code, Status
from tests import builders as b
from tests.builders import filter_result

from ..captured import FULL, NODE_CACHE, body, doc, requests


def test_go_fields_matches_keys_like_go_decoder() -> None:
    table = {"pod": "Pod", "Pod": "Pod", "nodenames": "NodeNames", "NodeNames": "NodeNames"}
    got = go_fields({"POD": 1, "nodeNAMES": ["a"], "Unknown": 3}, table)
    assert got == {"Pod": 1, "NodeNames": ["a"]}
    # the last duplicate wins, whatever its case
    assert go_fields({"Pod": 1, "pod": 2}, table) == {"Pod": 2}


def test_go_fields_uses_unicode_folding() -> None:
    # Go folds the long s (U+017F) to "s", so "Nodeſ" names the Nodes field.
    args = parse_extender_args('{"Pod":{},"NodeName\u017f":["n1"]}'.encode())
    assert args.node_names == ("n1",)


@pytest.mark.parametrize(
    "name", requests(NODE_CACHE, "filter") + requests(NODE_CACHE, "prioritize")
)
def test_captured_node_cache_requests_decode(name: str) -> None:
    raw = doc(NODE_CACHE, name)
    args = parse_extender_args(body(NODE_CACHE, name))
    assert args.names_given and args.node_items is None
    assert args.node_names == tuple(raw["NodeNames"])
    assert args.pod["metadata"]["uid"] == raw["Pod"]["metadata"]["uid"]


@pytest.mark.parametrize("name", requests(FULL, "filter") + requests(FULL, "prioritize"))
def test_captured_full_requests_decode(name: str) -> None:
    raw = doc(FULL, name)
    args = parse_extender_args(body(FULL, name))
    assert not args.names_given
    assert args.node_items == raw["Nodes"]["items"]
    assert args.node_names == tuple(n["metadata"]["name"] for n in raw["Nodes"]["items"])


def test_captured_preempt_requests_decode_in_both_modes() -> None:
    for run, field in ((NODE_CACHE, "NodeNameToMetaVictims"), (FULL, "NodeNameToVictims")):
        for name in requests(run, "preempt"):
            raw = doc(run, name)[field]
            args = parse_preemption_args(body(run, name))
            if field == "NodeNameToMetaVictims":
                want = {n: [p["UID"] for p in v["Pods"]] for n, v in raw.items()}
            else:
                want = {n: [p["metadata"]["uid"] for p in v["Pods"]] for n, v in raw.items()}
            assert args.candidates == want
            assert args.pdb_violations == {n: v["NumPDBViolations"] for n, v in raw.items()}


def test_all_lowercase_request_decodes() -> None:
    lowered = body(NODE_CACHE, "001-filter.req.json").lower()
    args = parse_extender_args(lowered)
    assert args.node_names == ("node-a", "node-b")
    pre = parse_preemption_args(body(NODE_CACHE, "008-preempt.req.json").lower())
    assert set(pre.candidates) == {"node-a", "node-b"}
    assert all(len(u) == 1 for u in pre.candidates.values())


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty request body"),
        (b"{not json", "malformed JSON"),
        (b"[1, 2]", "must be a JSON ExtenderArgs object, got array"),
        (b'{"NodeNames": ["a"]}', "missing Pod"),
        (b'{"Pod": null, "NodeNames": ["a"]}', "missing Pod"),
        (b'{"Pod": "x"}', "Pod must be a JSON object"),
        (b'{"Pod": {}, "NodeNames": "a"}', "NodeNames must be an array"),
        (b'{"Pod": {}, "NodeNames": [1]}', "NodeNames must be an array of strings"),
        (
            b'{"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}}',
            "Nodes.items[0] has no metadata.name",
        ),
        (b'{"Pod": {}, "Nodes": {"items": 3}}', "Nodes.items must be an array"),
    ],
)
def test_bad_extender_args(raw: bytes, message: str) -> None:
    with pytest.raises(WireError) as err:
        parse_extender_args(raw)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"NodeNameToMetaVictims": {}}', "missing Pod"),
        (b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{}]}}}', "has no UID"),
        (b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"NumPDBViolations": 1.5}}}', "integer"),
        (
            b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"NumPDBViolations": 9223372036854775808'
            b"}}}",
            "64-bit",
        ),
        (
            b'{"Pod": {}, "NodeNameToVictims": {"n": {"Pods": [{"metadata": {}}]}}}',
            "no metadata.uid",
        ),
        (b'{"Pod": {}, "NodeNameToMetaVictims": []}', "must be an object"),
    ],
)
def test_bad_preemption_args(raw: bytes, message: str) -> None:
    with pytest.raises(WireError) as err:
        parse_preemption_args(raw)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("pod", "uid"),
    [
        (b'{"UID": "u1"}', "u1"),  # kube-scheduler's own shape, read directly
        (b'{"uid": "u1"}', "u1"),  # a case-insensitive match, as Go's decoder makes
        (b'{"UID": "u1", "uid": "u2"}', "u2"),  # given twice: the last one counts
        (b'{"UID": "u1", "Name": "p"}', "u1"),  # unknown fields are ignored
    ],
)
def test_meta_victim_uids_decode_as_go_does(pod: bytes, uid: str) -> None:
    raw = b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "u0"}, %s]}}}' % pod
    assert parse_preemption_args(raw).candidates == {"n": ["u0", uid]}


@pytest.mark.parametrize("pod", [b'{"UID": ""}', b'{"UID": 5}', b'"u1"', b"null"])
def test_meta_victim_without_a_uid_string_is_refused_with_its_place(pod: bytes) -> None:
    raw = b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": "u0"}, %s]}}}' % pod
    with pytest.raises(WireError) as err:
        parse_preemption_args(raw)
    assert "NodeNameToMetaVictims['n'].Pods[1]" in str(err.value)


def test_integral_float_pdb_violations_are_accepted() -> None:
    args = parse_preemption_args(
        b'{"Pod": {}, "NodeNameToMetaVictims": {"a": {"Pods": [], "NumPDBViolations": 2.0}}}'
    )
    assert args.pdb_violations == {"a": 2} and isinstance(args.pdb_violations["a"], int)


def test_null_victims_and_null_pods_mean_no_victims() -> None:
    args = parse_preemption_args(
        b'{"Pod": {}, "NodeNameToMetaVictims": {"a": null, "b": {"Pods": null}}}'
    )
    assert args.candidates == {"a": [], "b": []}
    assert args.pdb_violations == {"a": 0, "b": 0}


def test_filter_result_node_cache_form_is_go_shaped() -> None:
    args = parse_extender_args(b'{"Pod": {}, "Nodes": null, "NodeNames": ["a", "b", "c"]}')
    out = encode_filter_result(
        args, filter_result(["a"], {"b": "queue overused"}, {"c": "queue closed"})
    )
    assert out == (
        b'{"Nodes":null,"NodeNames":["a"],"FailedNodes":{"b":"queue overused"},'
        b'"FailedAndUnresolvableNodes":{"c":"queue closed"},"Error":""}'
    )


def test_an_answer_passing_every_name_sends_the_list_back_as_it_came() -> None:
    args = parse_extender_args(b'{"Pod": {}, "Nodes": null, "NodeNames": [ "a", "\\u0062" ]}')
    out = encode_filter_result(args, FilterResult(args.node_names))
    assert out == (
        b'{"Nodes":null,"NodeNames":[ "a", "\\u0062" ],"FailedNodes":{},'
        b'"FailedAndUnresolvableNodes":{},"Error":""}'
    )
    narrowed = encode_filter_result(args, FilterResult(list(args.node_names)))  # another list
    assert b'"NodeNames":["a","b"]' in narrowed


def test_a_node_object_holding_an_integer_beyond_64_bits_goes_back_unchanged() -> None:
    """Python decodes any JSON integer and orjson writes none beyond 64 bits: a passing Node
    object holding one (kube-scheduler never sends it; a hand-made request may) still goes
    back as it came, not as a server error."""
    huge = -9223372036854775809
    body = json.dumps(
        {"Pod": {}, "Nodes": {"items": [{"x": huge, "metadata": {"name": "n0"}}]}}
    ).encode()
    args = parse_extender_args(body)
    out = json.loads(encode_filter_result(args, FilterResult(["n0"], {})))
    assert out["Nodes"]["items"] == [{"x": huge, "metadata": {"name": "n0"}}]
    assert out["NodeNames"] is None and out["Error"] == ""


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(st.text(max_size=6), max_size=5),
    spaced=st.booleans(),
    passed=st.sampled_from(["all", "some", "none"]),
)
def test_the_answer_means_the_same_whether_the_list_is_sent_back_or_written_anew(
    names: list[str], spaced: bool, passed: str
) -> None:
    body = (json.dumps if spaced else orjson.dumps)({"Pod": {}, "NodeNames": names})
    raw = body.encode() if isinstance(body, str) else body
    args = parse_extender_args(raw)
    chosen = {"all": args.node_names, "some": list(args.node_names[::2]), "none": []}[passed]
    result = FilterResult(chosen)
    sent = encode_filter_result(args, result)
    written = encode_filter_result(replace(args, names_json=None), result)
    assert orjson.loads(sent) == orjson.loads(written)


@pytest.mark.parametrize(
    ("code", "field"),
    [
        (Code.UNSCHEDULABLE, "FailedNodes"),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "FailedAndUnresolvableNodes"),
        (Code.ERROR, "FailedAndUnresolvableNodes"),
        (Code.SKIP, "FailedAndUnresolvableNodes"),
        (Code.WAIT, "FailedAndUnresolvableNodes"),
        (Code.NOT_EVALUABLE, "FailedAndUnresolvableNodes"),
    ],
)
def test_only_a_node_eviction_may_help_is_sent_as_a_preemption_candidate(
    code: Code, field: str
) -> None:
    args = parse_extender_args(b'{"Pod": {}, "NodeNames": ["a", "b"]}')
    result = FilterResult(["a"], {"b": Status(code, ["queue says no", "twice"], "p")})
    out = orjson.loads(encode_filter_result(args, result))
    other = {"FailedNodes", "FailedAndUnresolvableNodes"} - {field}
    assert out[field] == {"b": "queue says no, twice"}
    assert out[other.pop()] == {}


def test_filter_result_full_form_lists_passing_node_objects() -> None:
    raw = doc(FULL, "001-filter.req.json")
    args = parse_extender_args(body(FULL, "001-filter.req.json"))
    out = orjson.loads(encode_filter_result(args, filter_result(["node-b"], {"node-a": "x"})))
    assert out["NodeNames"] is None
    assert out["Nodes"]["items"] == [raw["Nodes"]["items"][1]]


def test_filter_result_with_both_forms_in_request_answers_both() -> None:
    args = parse_extender_args(
        b'{"Pod": {}, "NodeNames": ["a", "b"],'
        b' "Nodes": {"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}}'
    )
    out = orjson.loads(encode_filter_result(args, filter_result(["b"], {"a": "no"})))
    assert out["NodeNames"] == ["b"]
    assert out["Nodes"]["items"] == [{"metadata": {"name": "b"}}]


def test_filter_error_and_other_encoders() -> None:
    assert orjson.loads(encode_filter_error("boom\nagain")) == {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "boom again",
    }
    assert encode_host_priorities(["a", "b"], {"b": 7}) == (
        b'[{"Host":"a","Score":0},{"Host":"b","Score":7}]'
    )
    assert encode_preemption_result(
        {"n": NodeVictims(uids=["u1", "u2"], num_pdb_violations=1)}
    ) == (
        b'{"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"u1"},{"UID":"u2"}],"NumPDBViolations":1}}}'
    )


def test_parse_pod_requires_an_object() -> None:
    assert parse_pod(b'{"metadata": {"name": "p"}}') == {"metadata": {"name": "p"}}
    with pytest.raises(WireError):
        parse_pod(b'"p"')


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.text(max_size=12), st.integers(min_value=-3, max_value=13)), max_size=20)
)
def test_the_score_encoder_writes_the_bytes_of_the_dict_path(pairs: list[tuple[str, int]]) -> None:
    """Names of any text (escaping included) and any scores, in range or not, twice (the
    second time from the kept pieces): byte for byte what orjson writes for the dicts."""
    names, scores = [n for n, _ in pairs], [s for _, s in pairs]
    encode = HostScoreEncoder(limit=8)
    for _ in range(2):
        assert encode(names, scores) == encode_host_score_array(names, scores)


def test_the_score_encoder_refuses_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="2 node names but 1 scores"):
        HostScoreEncoder()(["a", "b"], [1])


# --- the typed decoder and the generic one agree -----------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
_pods = st.one_of(
    _json,
    st.fixed_dictionaries({"metadata": st.fixed_dictionaries({"name": st.text(max_size=4)})}),
)
_names = st.one_of(st.none(), st.lists(st.text(max_size=6), max_size=4), _json)
_uids = st.one_of(st.text(max_size=3), _json)
_victims = st.one_of(
    st.none(),
    _json,
    st.fixed_dictionaries(
        {"Pods": st.one_of(st.none(), st.lists(st.fixed_dictionaries({"UID": _uids})))},
        optional={"NumPDBViolations": st.one_of(st.integers(-(2**64), 2**64), _json)},
    ),
)
#: Mostly kube-scheduler's own keys, sometimes as Go would also read them (any case), or a
#: key Go ignores.
_keys = st.sampled_from(["", "", "", "lower", "upper", "stray"])


def _keyed(key: str, how: str) -> str:
    return {"lower": key.lower(), "upper": key.upper(), "stray": key + "x"}.get(how, key)


def _outcome(parse: Callable[[bytes], object], body: bytes) -> object:
    try:
        return parse(body)
    except WireError as exc:
        return ("refused", str(exc))


@settings(max_examples=300, deadline=None)
@given(
    pod=st.one_of(st.none(), _pods),
    names=_names,
    nodes=st.one_of(st.none(), st.just({"items": [{"metadata": {"name": "n1"}}]}), _json),
    keys=st.tuples(_keys, _keys, _keys),
    drop=st.sets(st.sampled_from(["Pod", "Nodes", "NodeNames"])),
)
def test_extender_args_decode_as_the_generic_go_decoder_does(
    pod: object, names: object, nodes: object, keys: tuple[str, str, str], drop: set[str]
) -> None:
    fields = {"Pod": pod, "Nodes": nodes, "NodeNames": names}
    doc = {
        _keyed(k, how): v for (k, v), how in zip(fields.items(), keys, strict=True) if k not in drop
    }
    body = json.dumps(doc).encode()
    assert _outcome(parse_extender_args, body) == _outcome(parse_extender_args_generic, body)


@settings(max_examples=300, deadline=None)
@given(
    pod=st.one_of(st.none(), _pods),
    victims=st.one_of(st.none(), _json, st.dictionaries(st.text(max_size=3), _victims)),
    full=st.one_of(st.none(), st.just({})),
    how=_keys,
)
def test_preemption_args_decode_as_the_generic_go_decoder_does(
    pod: object, victims: object, full: object, how: str
) -> None:
    doc = {"Pod": pod, "NodeNameToVictims": full, _keyed("NodeNameToMetaVictims", how): victims}
    body = json.dumps(doc).encode()
    assert _outcome(parse_preemption_args, body) == _outcome(parse_preemption_args_generic, body)


@pytest.mark.parametrize(
    "raw",
    [b"", b"[]", b"{", b'{"Pod": {}} x', b'{"Pod": {"a": NaN}}', b'\xef\xbb\xbf{"Pod": {}}'],
)
def test_what_the_typed_decoder_refuses_gets_the_generic_sentence(raw: bytes) -> None:
    assert _outcome(parse_extender_args, raw) == _outcome(parse_extender_args_generic, raw)
    assert _outcome(parse_preemption_args, raw) == _outcome(parse_preemption_args_generic, raw)


def test_a_body_nested_past_the_decoders_depth_is_refused_with_a_sentence() -> None:
    deep = b'{"Pod": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}"
    for parse in (parse_extender_args, parse_preemption_args):
        with pytest.raises(WireError, match="malformed JSON"):
            parse(deep)


def test_every_captured_request_of_kube_scheduler_takes_the_typed_decoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What kube-scheduler sends is decoded once: the generic way is for other clients (the
    full-object preempt form excepted, which always takes it)."""

    def generic(_: bytes) -> None:
        raise AssertionError("decoded the generic way")

    monkeypatch.setattr(protocol, "parse_extender_args_generic", generic)
    monkeypatch.setattr(protocol, "parse_preemption_args_generic", generic)
    for run in (NODE_CACHE, FULL):
        for name in requests(run, "filter") + requests(run, "prioritize"):
            parse_extender_args(body(run, name))
    for name in requests(NODE_CACHE, "preempt"):
        parse_preemption_args(body(NODE_CACHE, name))


# --- node-name lists offered again --------------------------------------------------------


def _names_request(names: list[str], spaced: bool = False) -> bytes:
    if spaced:
        return json.dumps({"Pod": {}, "NodeNames": names}).encode()
    return orjson.dumps({"Pod": {}, "Nodes": None, "NodeNames": names})


def test_a_list_offered_again_is_handed_out_as_the_same_tuple() -> None:
    offered = OfferedNames()
    first = parse_extender_args(_names_request(["n1", "n2"]), offered)
    again = parse_extender_args(_names_request(["n1", "n2"]), offered)
    assert again.node_names == ("n1", "n2") and again.node_names is first.node_names
    assert offered.hits == 1
    reordered = parse_extender_args(_names_request(["n2", "n1"]), offered)
    assert reordered.node_names == ("n2", "n1") and offered.hits == 1


def test_the_same_names_written_otherwise_are_decoded_as_a_new_list() -> None:
    offered = OfferedNames()
    compact = parse_extender_args(_names_request(["n1", "n2"]), offered)
    spaced = parse_extender_args(_names_request(["n1", "n2"], spaced=True), offered)
    assert spaced.node_names == compact.node_names and spaced.node_names is not compact.node_names


def test_a_new_list_is_decoded_by_the_backend_first_and_then_kept() -> None:
    asked: list[bytes] = []

    def known(data: bytes) -> tuple[str, ...] | None:
        asked.append(data)
        return ("from-backend",) if data == b'["n1"]' else None

    offered = OfferedNames(known=known)
    first = parse_extender_args(_names_request(["n1"]), offered)
    assert first.node_names == ("from-backend",)
    again = parse_extender_args(_names_request(["n1"]), offered)
    assert again.node_names is first.node_names and asked == [b'["n1"]']
    declined = parse_extender_args(_names_request(["n2"]), offered)
    assert declined.node_names == ("n2",)  # the backend declined: decoded as any JSON


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(["n1", "n2", "n3"]), max_size=4), st.booleans()),
        max_size=12,
    )
)
def test_requests_decode_alike_with_and_without_the_caches_names(
    requests_: list[tuple[list[str], bool]],
) -> None:
    state = ClusterState()
    for name in ("n1", "n2"):  # n3 is not in the cache
        state.upsert("Node", b.node(name))
    offered = OfferedNames(entries=3, known=state.decode_offered_names)
    for names, spaced in requests_:
        raw = _names_request(names, spaced)
        assert parse_extender_args(raw, offered) == parse_extender_args(raw)


def test_lists_beyond_the_bounds_are_dropped_least_recently_offered_first() -> None:
    offered = OfferedNames(entries=2)
    for name in ("a", "b", "a", "c"):  # "a" offered again: "b" is the oldest
        parse_extender_args(_names_request([name]), offered)
    assert len(offered) == 2 and offered.hits == 1
    parse_extender_args(_names_request(["a"]), offered)
    assert offered.hits == 2
    parse_extender_args(_names_request(["b"]), offered)
    assert offered.hits == 2
    by_bytes = OfferedNames(max_bytes=len(b'["n1"]'))
    for name in ("n1", "n2"):
        parse_extender_args(_names_request([name]), by_bytes)
    assert len(by_bytes) == 1


def test_lists_whose_checksums_collide_are_told_apart_by_their_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(protocol.zlib, "crc32", lambda data: 0)
    offered = OfferedNames()
    assert parse_extender_args(_names_request(["n1"]), offered).node_names == ("n1",)
    assert parse_extender_args(_names_request(["n2"]), offered).node_names == ("n2",)
    assert parse_extender_args(_names_request(["n1"]), offered).node_names == ("n1",)
    assert offered.hits == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"Pod": {}, "NodeNames": [1]}', "NodeNames must be an array of strings"),
        (b'{"Pod": {}, "NodeNames": "a"}', "NodeNames must be an array"),
    ],
)
@pytest.mark.parametrize("known", [False, True])
def test_a_bad_list_gets_the_same_sentence_and_is_not_kept(
    raw: bytes, message: str, known: bool
) -> None:
    state = ClusterState()
    state.upsert("Node", b.node("a"))
    offered = OfferedNames(known=state.decode_offered_names if known else None)
    with pytest.raises(WireError) as err:
        parse_extender_args(raw, offered)
    assert message in str(err.value)
    assert len(offered) == 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(["n1", "n2", "n3"]), max_size=4),
            st.booleans(),
            st.booleans(),
        ),
        max_size=12,
    )
)
def test_requests_decode_alike_with_and_without_the_recent_lists(
    requests_: list[tuple[list[str], bool, bool]],
) -> None:
    offered = OfferedNames(entries=3)
    for names, spaced, with_names in requests_:
        raw = (
            _names_request(names, spaced)
            if with_names
            else orjson.dumps({"Pod": {}, "NodeNames": None})
        )
        assert parse_extender_args(raw, offered) == parse_extender_args(raw)
