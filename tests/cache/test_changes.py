"""Each cluster event is classified by what it changes of a session's derived inputs:
inert, a change of some jobs' sums and nodes' amounts, or structural."""

from __future__ import annotations

from scheduler_core.cache.changes import LOG_LIMIT, ChangeLog, SumChanges
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from tests.builders import node, pod, podgroup, queue


def _state() -> ClusterState:
    state = ClusterState()
    state.apply_objects(
        collect(
            [
                node("n1"),
                queue("q1"),
                podgroup("g1", queue="q1"),
                pod("a", group="g1", node_name="n1"),
                pod("b", group="g1"),
                pod("solo", queue="q1"),
            ]
        )
    )
    return state


def test_the_log_accumulates_sum_changes_and_forgets_them_at_a_structural_one() -> None:
    log = ChangeLog()
    log.sums(["j1"], ["n1"])
    start = log.version
    log.sums(["j2"], [])
    log.sums(["j1"], ["n2"])
    assert log.since(start) == SumChanges({"j1", "j2"}, {"n2"})
    assert log.since(log.version) == SumChanges()
    log.structural()
    assert log.since(start) is None
    assert log.since(log.version) == SumChanges()


def test_a_session_too_far_behind_the_log_is_told_to_rebuild() -> None:
    log = ChangeLog()
    for i in range(LOG_LIMIT + 1):
        log.sums([f"j{i}"], [])
    assert log.since(0) is None
    assert log.since(1) is not None


def test_a_label_change_of_a_running_pod_is_inert() -> None:
    state = _state()
    version, seen = state.decision_version, state.version
    state.upsert("Pod", pod("a", group="g1", node_name="n1", labels={"x": "y"}))
    assert state.decision_version == version
    assert state.version == seen + 1  # still an event for whoever watches every change


def test_a_bind_changes_its_jobs_sums_and_its_nodes_amounts() -> None:
    state = _state()
    version = state.decision_version
    state.upsert("Pod", pod("b", group="g1", node_name="n1"))
    assert state.changes.since(version) == SumChanges({"ns/g1"}, {"n1"})
    version = state.decision_version
    state.delete("Pod", "ns/a")
    assert state.changes.since(version) == SumChanges({"ns/g1"}, {"n1"})


def test_a_plain_pods_group_of_one_is_kept_across_its_updates_while_its_queue_stays() -> None:
    state = _state()
    job_id = next(uid for uid, job in state.snapshot().jobs.items() if job.synthesized)
    before = state.shared_snapshot().jobs[job_id]
    version = state.decision_version
    state.upsert("Pod", pod("solo", queue="q1", node_name="n1"))
    after = state.shared_snapshot().jobs[job_id]
    assert after is before and state.changes.since(version) == SumChanges({job_id}, {"n1"})
    state.upsert("Pod", pod("solo", queue="other", node_name="n1"))
    assert state.shared_snapshot().jobs.get(job_id) is not before
    assert state.changes.since(version) is None


def test_a_plain_pods_creation_is_a_sum_change_its_group_of_one_appeared() -> None:
    state = _state()
    version = state.decision_version
    state.upsert("Pod", pod("first", queue="q1"))
    state.upsert("Pod", pod("second", queue="q1", node_name="n1"))
    new = [uid for uid, job in state.snapshot().jobs.items() if job.synthesized][-2:]
    assert state.changes.since(version) == SumChanges(set(new), {"n1"}, dict.fromkeys(new))
    state.upsert("Pod", pod("first", queue="q1", node_name="n1"))  # then bound: kept
    assert state.changes.since(version) == SumChanges(set(new), {"n1"}, dict.fromkeys(new))


def test_a_podgroup_update_in_its_queue_is_a_sum_change_moving_queues_is_structural() -> None:
    state = _state()
    version = state.decision_version
    state.upsert("PodGroup", podgroup("g1", 2, queue="q1", phase="Inqueue"))
    assert state.changes.since(version) == SumChanges({"ns/g1"}, set())
    state.upsert("PodGroup", podgroup("g1", 2, queue="default"))
    assert state.changes.since(version) is None


def test_node_and_queue_events_are_structural() -> None:
    state = _state()
    for kind, obj in (("Node", node("n2")), ("Queue", queue("q2"))):
        version = state.decision_version
        state.upsert(kind, obj)
        assert state.changes.since(version) is None, kind


def test_a_podgroups_creation_and_deletion_are_sum_changes_its_job_appeared_and_gone() -> None:
    state = _state()
    state.upsert("Pod", pod("new", group="g2"))  # waits for its PodGroup: in no job's sums
    version = state.decision_version
    state.upsert("PodGroup", podgroup("g2", queue="q1"))  # a job appears, adopting its pod
    assert state.changes.since(version) == SumChanges(
        {"ns/g2"}, set(), appeared=dict.fromkeys(["ns/g2"])
    )
    assert state.job("ns/g2") is not None and "ns/new" in {
        t.key
        for t in state.job("ns/g2").tasks.values()  # type: ignore[union-attr]
    }
    version = state.decision_version
    state.delete("PodGroup", "ns/g1")  # its members wait again, on the nodes they hold
    assert state.changes.since(version) == SumChanges(
        {"ns/g1"}, set(), gone=dict.fromkeys(["ns/g1"])
    )
    assert state.task("ns/a") is not None and state.task("ns/a").node_name == "n1"  # type: ignore[union-attr]


def test_a_plain_pods_deletion_is_a_sum_change_its_group_of_one_gone() -> None:
    state = _state()
    solo = next(uid for uid, job in state.snapshot().jobs.items() if job.synthesized)
    state.upsert("Pod", pod("later", queue="q1", node_name="n1"))
    later = [uid for uid, job in state.snapshot().jobs.items() if job.synthesized][-1]
    version = state.decision_version
    state.delete("Pod", "ns/solo")  # waiting: its group of one goes with it
    assert state.changes.since(version) == SumChanges({solo}, set(), gone=dict.fromkeys([solo]))
    state.delete("Pod", "ns/later")  # running on n1
    assert state.changes.since(version) == SumChanges(
        {solo, later}, {"n1"}, gone=dict.fromkeys([solo, later])
    )
    assert list(state.changes.since(version).gone) == [solo, later]  # in the order they went


def test_an_unusable_object_moves_no_version() -> None:
    state = _state()
    version = state.decision_version
    state.upsert("Pod", {"kind": "Pod", "metadata": {}})
    assert state.decision_version == version
