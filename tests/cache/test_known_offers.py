"""Offered node-name lists found all in the cache are remembered by identity, and only
while no node was removed: a list offered again is not checked name by name."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.cache.known_offers import KnownOffers
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


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("offer"), st.integers(0, 3)),
            st.tuples(st.just("add"), st.sampled_from(["n1", "n2", "n3", "n4"])),
            st.tuples(st.just("remove"), st.sampled_from(["n1", "n2", "n3", "n4"])),
        ),
        max_size=30,
    )
)
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
