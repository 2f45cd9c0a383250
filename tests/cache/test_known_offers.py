"""Offered node-name lists found all in the cache are remembered by identity, and only
while no node was removed: a list offered again is not checked name by name. A list offered
for the first time is decoded against the cache's names, into its own strings, and vouched
for unless a node was removed since the decoder was built."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.cache.known_offers import REBUILD_INTERVAL, KnownOffers, OfferedNameDecoder
from scheduler_core.cache.state import ClusterState
from tests import builders as b


class CountingNodes(dict[str, object]):
    """A node map that counts its membership tests."""

    looked = 0

    def __contains__(self, name: object) -> bool:
        self.looked += 1
        return super().__contains__(name)


def test_a_tuple_found_all_known_is_answered_again_without_a_look() -> None:
    nodes = CountingNodes(n1=1, n2=2)
    offers = KnownOffers()
    names = ("n1", "n2")
    assert offers.all_known(names, nodes) and nodes.looked == 2
    assert offers.all_known(names, nodes) and nodes.looked == 2
    equal = tuple(["n1", "n2"])  # (not the constant above, which Python would share)
    assert offers.all_known(equal, nodes) and nodes.looked == 4  # an equal tuple: looked


def test_a_list_is_looked_at_every_time_it_may_have_changed_in_between() -> None:
    nodes = CountingNodes(n1=1)
    offers = KnownOffers()
    names = ["n1"]
    assert offers.all_known(names, nodes)
    names.append("n9")
    assert not offers.all_known(names, nodes)
    assert len(offers) == 0


def test_a_list_with_an_unknown_name_is_not_remembered() -> None:
    offers = KnownOffers()
    assert not offers.all_known(("n1", "n9"), {"n1": 1})
    assert len(offers) == 0


def test_only_the_newest_lists_are_kept() -> None:
    offers = KnownOffers(size=2)
    nodes = CountingNodes(n1=1, n2=2, n3=3)
    first, second, third = ("n1",), ("n2",), ("n3",)
    for names in (first, second, third):
        offers.all_known(names, nodes)
    assert len(offers) == 2
    looked = nodes.looked
    assert offers.all_known(third, nodes) and nodes.looked == looked
    assert offers.all_known(first, nodes) and nodes.looked == looked + 1  # dropped: looked


def test_removing_a_node_from_the_cache_forgets_every_list() -> None:
    state = ClusterState()
    for name in ("n1", "n2"):
        state.upsert("Node", b.node(name))
    offered = ("n1", "n2")
    assert state.offered_all_known(offered)
    state.upsert("Node", b.node("n3"))  # a node added cannot make a known name unknown
    assert state.offered_all_known(offered)
    state.delete("Node", "n2")
    assert not state.offered_all_known(offered)
    assert state.offered_all_known(("n1",))


def node_steps(*more: st.SearchStrategy[tuple[str, object]]) -> st.SearchStrategy[Any]:
    """Lists offered (by index), nodes added and removed, and ``more``."""
    node = st.sampled_from(["n1", "n2", "n3", "n4"])
    return st.lists(
        st.one_of(
            st.tuples(st.just("offer"), st.integers(0, 3)),
            st.tuples(st.just("add"), node),
            st.tuples(st.just("remove"), node),
            *more,
        ),
        max_size=30,
    )


@settings(max_examples=200, deadline=None)
@given(steps=node_steps())
def test_the_answer_is_always_a_look_at_the_cache_as_it_is(
    steps: list[tuple[str, object]],
) -> None:
    lists = [("n1",), ("n1", "n2"), ("n2", "n3", "n4"), ("n4", "n1")]
    state = ClusterState()
    held: set[str] = set()
    for op, arg in steps:
        if op == "offer":
            names = lists[int(str(arg))]
            assert state.offered_all_known(names) == all(n in held for n in names)
        elif op == "add":
            state.upsert("Node", b.node(str(arg)))
            held.add(str(arg))
        else:
            state.delete("Node", str(arg))
            held.discard(str(arg))


# --- lists decoded against the cache's names ----------------------------------------------


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Source:
    """A node map and its known lists, as the cache's views show them to the decoder; counts
    the decoder's builds (by the version each read)."""

    def __init__(self, nodes: dict[str, object], offers: KnownOffers) -> None:
        self.nodes = nodes
        self.offers = offers
        self.builds: list[int] = []

    def names_at(self) -> tuple[int, list[str]]:
        self.builds.append(self.offers.names_version)
        return self.offers.names_version, list(self.nodes)

    def names_version(self) -> int:
        return self.offers.names_version

    def vouch_offered(self, names: tuple[str, ...], version: int) -> bool:
        return self.offers.vouch(names, version)


def cluster(*names: str, clock: Clock | None = None) -> ClusterState:
    state = ClusterState(clock or Clock())
    for name in names:
        state.upsert("Node", b.node(name))
    return state


def test_a_list_of_known_names_decodes_into_the_caches_own_strings() -> None:
    state = cluster("n1", "n2", "n3")
    decoded = state.decode_offered_names(b'["n3","n1"]')
    assert decoded == ("n3", "n1")
    own = {name: name for name in state.node_names()}  # the node map's key objects
    assert all(name is own[name] for name in decoded)


def test_a_decoded_list_is_answered_all_known_without_a_look() -> None:
    nodes = CountingNodes(n1=1, n2=2)
    offers = KnownOffers()
    decoded = OfferedNameDecoder(Clock()).decode(b'["n2","n1"]', Source(nodes, offers))
    assert decoded is not None
    assert offers.all_known(decoded, nodes) and nodes.looked == 0


@pytest.mark.parametrize(
    "data",
    [
        b'["n1","n9"]',  # a name the cache does not hold
        b'["n1",1]',
        b'{"n1":1}',
        b'"n1"',
        b'["n1"',
        b"null",
    ],
)
def test_anything_but_an_array_of_known_names_is_left_to_plain_decoding(data: bytes) -> None:
    assert cluster("n1", "n2").decode_offered_names(data) is None


def test_an_empty_cache_decodes_nothing() -> None:
    assert cluster().decode_offered_names(b'["n1"]') is None


def test_a_node_removed_after_the_decoder_was_built_is_looked_up_again() -> None:
    state = cluster("n1", "n2")
    assert state.decode_offered_names(b'["n1"]') is not None  # builds the decoder
    state.delete("Node", "n2")
    decoded = state.decode_offered_names(b'["n1","n2"]')  # decoder out of date, not rebuilt
    assert decoded == ("n1", "n2")
    assert not state.offered_all_known(decoded)  # not vouched for: looked at, n2 is gone


def test_a_node_added_after_the_decoder_was_built_waits_for_the_next_build() -> None:
    clock = Clock()
    state = cluster("n1", clock=clock)
    assert state.decode_offered_names(b'["n1"]') == ("n1",)
    state.upsert("Node", b.node("n2"))
    assert state.decode_offered_names(b'["n1","n2"]') is None  # plain decoding, then a look
    assert state.decode_offered_names(b'["n1"]') == ("n1",)  # what it knows still decodes
    clock.now += REBUILD_INTERVAL
    decoded = state.decode_offered_names(b'["n1","n2"]')
    assert decoded == ("n1", "n2") and state.offered_all_known(decoded)


def test_a_decoder_out_of_date_is_built_again_at_most_once_an_interval() -> None:
    clock = Clock()
    source = Source({"n1": 1}, KnownOffers())
    decoder = OfferedNameDecoder(clock)
    decoder.decode(b'["n1"]', source)
    for name in ("n2", "n3", "n4"):
        source.nodes[name] = 1
        source.offers.node_added()
        decoder.decode(b'["n1"]', source)
    assert source.builds == [0]
    clock.now += REBUILD_INTERVAL
    decoder.decode(b'["n1"]', source)
    decoder.decode(b'["n1"]', source)
    assert source.builds == [0, 3]


@settings(max_examples=200, deadline=None)
@given(steps=node_steps(st.tuples(st.just("wait"), st.sampled_from([0.5, REBUILD_INTERVAL]))))
def test_a_list_decoded_against_the_cache_is_known_exactly_when_the_cache_holds_it(
    steps: list[tuple[str, object]],
) -> None:
    lists = [b'["n1"]', b'["n1","n2"]', b'["n2","n3","n4"]', b'["n4","n1","n4"]']
    clock = Clock()
    state = ClusterState(clock)
    held: set[str] = set()
    for op, arg in steps:
        if op == "offer":
            data = lists[int(str(arg))]
            plain = tuple(msgspec.json.decode(data, type=list[str]))
            decoded = state.decode_offered_names(data)
            if decoded is not None:
                assert decoded == plain
            names = decoded if decoded is not None else plain
            assert state.offered_all_known(names) == all(n in held for n in names)
        elif op == "add":
            state.upsert("Node", b.node(str(arg)))
            held.add(str(arg))
        elif op == "remove":
            state.delete("Node", str(arg))
            held.discard(str(arg))
        else:
            clock.now += float(str(arg))
