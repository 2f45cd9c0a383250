"""A stand-in Kubernetes API server speaking real HTTP on 127.0.0.1, driven by tests.

It implements the part of the API the informers use, with the semantics that matter to a
reflector: paginated lists from a consistent snapshot (continue tokens expire on compaction),
watches from a resourceVersion out of a bounded event log (410 Gone once compacted, as an HTTP
status or an in-stream ERROR event), bookmarks, chunked streaming, timeouts, abrupt
disconnects, injected failures, CRDs that are not installed, and an optional bearer token.

Its resource table is written out here on purpose rather than imported from the engine, so a
wrong plural or group in the engine's table fails the tests instead of being mirrored.

Objects are serialised once (orjson) when stored; list pages and watch events are assembled
from those bytes, so 50,000 pods list in pages of 500 without re-encoding anything.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import select
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import orjson


@dataclass(frozen=True, slots=True)
class Resource:
    """One served resource type. ``kind`` names it to the control surface; ``object_kind``
    is the ``kind`` its objects carry when that differs (two resources of one kind)."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    object_kind: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


RESOURCES: tuple[Resource, ...] = (
    Resource("Pod", "", "v1", "pods", True),
    Resource("Node", "", "v1", "nodes", False),
    Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False),
    Resource("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
    Resource("Queue", "scheduling.volcano.sh", "v1beta1", "queues", False),
    Resource("PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups", True),
    Resource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True),
    Resource("PersistentVolume", "", "v1", "persistentvolumes", False),
    Resource("StorageClass", "storage.k8s.io", "v1", "storageclasses", False),
    Resource("CSINode", "storage.k8s.io", "v1", "csinodes", False),
    Resource("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True),
    Resource("ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates", True),
    Resource("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", False),
    Resource("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False),
    Resource("Namespace", "", "v1", "namespaces", False),
    Resource("HyperNode", "topology.volcano.sh", "v1alpha1", "hypernodes", False),
    # Kubernetes' native PodGroups in both versions the engine reads; not served until a
    # test installs them (as on a cluster without the Workload API).
    Resource("NativePodGroup", "scheduling.k8s.io", "v1beta1", "podgroups", True, "PodGroup"),
    Resource(
        "NativePodGroup/v1alpha2", "scheduling.k8s.io", "v1alpha2", "podgroups", True, "PodGroup"
    ),
)
#: By kind, and by plural where the first resource of that plural wins ("podgroups" is
#: Volcano's).
_BY_NAME: dict[str, Resource] = {r.plural: r for r in reversed(RESOURCES)} | {
    r.kind: r for r in RESOURCES
}
_NOT_SERVED_AT_FIRST: frozenset[tuple[str, str, str]] = frozenset(
    (r.group, r.plural, r.version)
    for r in RESOURCES
    if r.group == "scheduling.k8s.io" and r.plural == "podgroups"
)
_BY_PATH: dict[tuple[str, str, str], Resource] = {
    (r.group, r.version, r.plural): r for r in RESOURCES
}

ExpiredMode = Literal["http", "event"]

_LIVENESS_POLL = 0.1  # seconds between checks that a watching client is still connected


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server saw it, for assertions on what a client sent."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    at: float  # time.monotonic() on arrival
    user_agent: str = ""

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("1", "true")

    def param(self, name: str) -> str | None:
        return self.query.get(name)


@dataclass(slots=True)
class _Failure:
    remaining: int
    status: int
    watch: bool | None
    path: str | None
    with_continue: bool | None

    def matches(self, path: str, query: dict[str, str]) -> bool:
        if self.remaining <= 0:
            return False
        if self.watch is not None and (query.get("watch") in ("1", "true")) != self.watch:
            return False
        if self.path is not None and self.path != path:
            return False
        return self.with_continue is None or bool(query.get("continue")) == self.with_continue


@dataclass(frozen=True, slots=True)
class _Event:
    rv: int
    resource: Resource
    namespace: str
    type: str
    data: bytes  # the serialised object


@dataclass(slots=True)
class _Snapshot:
    rv: int
    items: list[bytes]


_STATUS_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "AlreadyExists",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(code: int, message: str, reason: str | None = None) -> bytes:
    """A ``kind: Status`` failure body as the API server writes it."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason or _STATUS_REASONS.get(code, ""),
            "code": code,
        }
    )


class FakeApiServer:
    """The server and its control surface. All control methods are thread-safe.

    Use as a context manager, or ``start()`` / ``stop()``. Kinds are named by kind ("Pod") or
    plural ("pods"); namespaced objects default to namespace ``default``.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        max_events: int = 100_000,
        bookmark_interval: float | None = None,
        expired_mode: ExpiredMode = "http",
        max_snapshots: int = 32,
        initial_resource_version: int = 1000,
    ) -> None:
        self.token = token
        self.bookmark_interval = bookmark_interval
        self._expired_mode: ExpiredMode = expired_mode
        self._max_events = max_events
        self._max_snapshots = max_snapshots
        self._cond = threading.Condition()
        self._rv = initial_resource_version
        self._compacted_rv = initial_resource_version
        self._log: list[_Event] = []
        self._log_start = initial_resource_version + 1  # rv of _log[0]
        self._objects: dict[Resource, dict[str, tuple[int, str, bytes]]] = {
            r: {} for r in RESOURCES
        }
        self._uninstalled: set[tuple[str, str, str]] = set(_NOT_SERVED_AT_FIRST)
        self._snapshots: OrderedDict[int, _Snapshot] = OrderedDict()
        self._next_snapshot = 1
        self._failures: list[_Failure] = []
        self._requests: list[RecordedRequest] = []
        self._bookmark_gen = 0
        self._drop_gen = 0
        self._error_gen = 0
        self._error_event: bytes = b""
        self._open_watches = 0
        self._stopping = False
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeApiServer:
        handler = _make_handler(self)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut down like a dying API server: open connections are cut, not ended politely."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            connections = list(self._connections)
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        for conn in connections:
            _cut(conn)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    # ------------------------------------------------------------------ objects

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out (etcd's revision)."""
        with self._cond:
            return self._rv

    def add(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create; returns the stored object (with its new resourceVersion)."""
        return self._write(kind, obj, "ADDED")

    def update(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace an existing object; returns it with its new resourceVersion."""
        return self._write(kind, obj, "MODIFIED")

    def delete(self, kind: str, obj_or_key: dict[str, Any] | str) -> None:
        """Delete by object or by key (``ns/name`` or ``name``)."""
        resource = _resource(kind)
        key = obj_or_key if isinstance(obj_or_key, str) else _key(resource, obj_or_key)
        with self._cond:
            store = self._objects[resource]
            if key not in store:
                raise KeyError(f"{resource.kind} {key} does not exist")
            _, namespace, data = store.pop(key)
            self._rv += 1
            obj = orjson.loads(data)
            obj["metadata"]["resourceVersion"] = str(self._rv)
            self._append(_Event(self._rv, resource, namespace, "DELETED", orjson.dumps(obj)))
            self._cond.notify_all()

    def load(self, kind: str, objs: Iterable[dict[str, Any]]) -> int:
        """Bulk create (for benchmarks): one lock, one wake-up. Returns the last resourceVersion.

        The caller's dicts are not copied (only their ``metadata.resourceVersion`` is set), so
        a generator of fresh dicts seeds 50,000 pods in a few seconds.
        """
        resource = _resource(kind)
        with self._cond:
            store = self._objects[resource]
            for obj in objs:
                _normalise(resource, obj)
                key = _key(resource, obj)
                if key in store:
                    raise KeyError(f"{resource.kind} {key} already exists")
                self._rv += 1
                obj["metadata"]["resourceVersion"] = str(self._rv)
                data = orjson.dumps(obj)
                namespace = obj["metadata"].get("namespace", "")
                store[key] = (self._rv, namespace, data)
                self._append(_Event(self._rv, resource, namespace, "ADDED", data))
            self._cond.notify_all()
            return self._rv

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        resource = _resource(kind)
        with self._cond:
            entry = self._objects[resource].get(key)
        return None if entry is None else orjson.loads(entry[2])

    def keys(self, kind: str) -> set[str]:
        resource = _resource(kind)
        with self._cond:
            return set(self._objects[resource])

    def _write(self, kind: str, obj: dict[str, Any], etype: str) -> dict[str, Any]:
        resource = _resource(kind)
        stored = copy.deepcopy(obj)
        _normalise(resource, stored)
        key = _key(resource, stored)
        with self._cond:
            store = self._objects[resource]
            if etype == "ADDED" and key in store:
                raise KeyError(f"{resource.kind} {key} already exists")
            if etype == "MODIFIED" and key not in store:
                raise KeyError(f"{resource.kind} {key} does not exist")
            self._rv += 1
            stored["metadata"]["resourceVersion"] = str(self._rv)
            data = orjson.dumps(stored)
            namespace = stored["metadata"].get("namespace", "")
            store[key] = (self._rv, namespace, data)
            self._append(_Event(self._rv, resource, namespace, etype, data))
            self._cond.notify_all()
        return stored

    def _append(self, event: _Event) -> None:
        # Called with the lock held. Events have consecutive rvs: _log[i].rv == _log_start + i.
        self._log.append(event)
        if len(self._log) > self._max_events:
            drop = len(self._log) - self._max_events // 2
            del self._log[:drop]
            self._log_start += drop
            self._compacted_rv = self._log_start - 1

    # ------------------------------------------------------------------ control

    def compact(self) -> int:
        """Forget all history: watches from older versions and open continue tokens get 410."""
        with self._cond:
            self._log.clear()
            self._log_start = self._rv + 1
            self._compacted_rv = self._rv
            self._snapshots.clear()
            return self._rv

    def set_expired_mode(self, mode: ExpiredMode) -> None:
        """How a watch from a compacted version fails: HTTP 410, or 200 + ERROR event."""
        with self._cond:
            self._expired_mode = mode

    def bookmark(self) -> int:
        """Send a BOOKMARK at the current version to every watch that asked for bookmarks."""
        with self._cond:
            self._bookmark_gen += 1
            self._cond.notify_all()
            return self._rv

    def drop_watches(self) -> None:
        """Cut every open watch mid-stream (no terminating chunk), like a lost connection."""
        with self._cond:
            self._drop_gen += 1
            self._cond.notify_all()

    def watch_error(self, code: int = 500, message: str = "internal error") -> None:
        """End every open watch with an in-stream ERROR event carrying a Status of ``code``."""
        event = {"type": "ERROR", "object": orjson.loads(status_body(code, message))}
        with self._cond:
            self._error_event = orjson.dumps(event) + b"\n"
            self._error_gen += 1
            self._cond.notify_all()

    def fail_next(
        self,
        n: int,
        status: int = 500,
        *,
        watch: bool | None = None,
        path: str | None = None,
        with_continue: bool | None = None,
    ) -> None:
        """Answer the next ``n`` matching requests with ``status`` (a Status body).

        Filters: ``watch`` (True: watches only, False: lists only), exact ``path``, and
        ``with_continue`` (list pages after the first). ``n=0`` clears all pending failures.
        """
        with self._cond:
            if n <= 0:
                self._failures.clear()
                return
            self._failures.append(_Failure(n, status, watch, path, with_continue))

    def set_crd_installed(
        self, group: str, plural: str, installed: bool, *, version: str | None = None
    ) -> None:
        """Whether the CRD (or API resource) is served, in every version or only
        ``version``; when not, its list and watch paths answer 404 and discovery omits it."""
        keys = {
            (r.group, r.plural, r.version)
            for r in RESOURCES
            if (r.group, r.plural) == (group, plural) and version in (None, r.version)
        }
        with self._cond:
            if installed:
                self._uninstalled -= keys
            else:
                self._uninstalled |= keys

    @property
    def request_log(self) -> list[RecordedRequest]:
        with self._cond:
            return list(self._requests)

    def requests(
        self, path: str | None = None, *, watch: bool | None = None
    ) -> list[RecordedRequest]:
        """The recorded requests, optionally only one path and/or only watches or lists."""
        return [
            r
            for r in self.request_log
            if (path is None or r.path == path) and (watch is None or r.watch == watch)
        ]

    @property
    def open_watches(self) -> int:
        with self._cond:
            return self._open_watches

    # ------------------------------------------------------------------ serving

    def _record(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        status: int,
        at: float | None = None,
        user_agent: str = "",
    ) -> None:
        at = time.monotonic() if at is None else at
        record = RecordedRequest(method, path, query, status, at, user_agent)
        with self._cond:
            self._requests.append(record)

    def _authorised(self, header: str | None) -> bool:
        return self.token is None or header == f"Bearer {self.token}"

    def _injected_failure(self, path: str, query: dict[str, str]) -> int | None:
        with self._cond:
            for failure in self._failures:
                if failure.matches(path, query):
                    failure.remaining -= 1
                    return failure.status
            self._failures = [f for f in self._failures if f.remaining > 0]
        return None

    def _installed(self, resource: Resource) -> bool:
        with self._cond:
            return (resource.group, resource.plural, resource.version) not in self._uninstalled

    def _discovery(self, path: str) -> tuple[int, bytes] | None:
        """The discovery document of ``/apis/<group>/<version>``: the installed resources
        of that group version (404 when none is); None for any other path."""
        segments = [s for s in path.split("/") if s]
        if len(segments) != 3 or segments[0] != "apis":
            return None
        group, version = segments[1], segments[2]
        served = [
            r for r in RESOURCES if (r.group, r.version) == (group, version) and self._installed(r)
        ]
        if not served:
            return 404, status_body(404, "the server could not find the requested resource")
        document = {
            "kind": "APIResourceList",
            "groupVersion": f"{group}/{version}",
            "resources": [
                {"name": r.plural, "kind": r.object_kind or r.kind, "namespaced": r.namespaced}
                for r in served
            ],
        }
        return 200, orjson.dumps(document)

    def _list(
        self, resource: Resource, namespace: str | None, query: dict[str, str]
    ) -> tuple[int, bytes]:
        limit = _int(query.get("limit"))
        token = query.get("continue") or ""
        with self._cond:
            if token:
                try:
                    snapshot_id, offset = _decode_continue(token)
                except ValueError:
                    return 400, status_body(400, "invalid continue token")
                snapshot = self._snapshots.get(snapshot_id)
                if snapshot is None or snapshot.rv < self._compacted_rv:
                    return 410, status_body(
                        410,
                        "The provided continue parameter is too old to display a consistent "
                        "list result. You can start a new list without the continue parameter.",
                    )
                self._snapshots.move_to_end(snapshot_id)
            else:
                store = self._objects[resource]
                ordered = sorted(store.items()) if limit else store.items()
                items = [
                    data for _, (_, ns, data) in ordered if namespace is None or ns == namespace
                ]
                snapshot = _Snapshot(self._rv, items)
                offset = 0
                snapshot_id = 0
                paginate = limit > 0 and query.get("resourceVersion") != "0"
                if paginate and len(items) > limit:
                    snapshot_id = self._next_snapshot
                    self._next_snapshot += 1
                    self._snapshots[snapshot_id] = snapshot
                    while len(self._snapshots) > self._max_snapshots:
                        self._snapshots.popitem(last=False)
                else:
                    limit = 0
        items = snapshot.items
        if limit:
            page = items[offset : offset + limit]
            more = offset + limit < len(items)
        else:
            page = items[offset:]
            more = False
        next_token = _encode_continue(snapshot_id, offset + limit) if more else ""
        head = b'{"kind":"%sList","apiVersion":"%s","metadata":{"resourceVersion":"%d"' % (
            resource.kind.encode(),
            resource.api_version.encode(),
            snapshot.rv,
        )
        if next_token:
            head += b',"continue":"%s","remainingItemCount":%d' % (
                next_token.encode(),
                len(items) - offset - limit,
            )
        return 200, head + b'},"items":[' + b",".join(page) + b"]}"

    def _serve_watch(
        self,
        handler: _Handler,
        target: tuple[Resource, str | None],
        path: str,
        query: dict[str, str],
        arrived: float,
    ) -> None:
        resource, namespace = target
        rv_param = query.get("resourceVersion") or ""
        timeout = float(_int(query.get("timeoutSeconds")) or 1800)
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        deadline = time.monotonic() + timeout
        initial: list[bytes] = []
        refusal: tuple[int, bytes] | None = None
        with self._cond:
            next_rv = self._rv + 1
            if rv_param in ("", "0"):
                # "Any version": synthetic ADDED events for the current state, then live.
                initial = [
                    _event_line("ADDED", data)
                    for _, ns, data in self._objects[resource].values()
                    if namespace is None or ns == namespace
                ]
            elif not rv_param.isdigit():
                refusal = (400, status_body(400, f"invalid resourceVersion {rv_param!r}"))
            elif int(rv_param) < self._compacted_rv:
                expired = status_body(
                    410, f"too old resource version: {rv_param} ({self._compacted_rv})"
                )
                if self._expired_mode == "http":
                    refusal = (410, expired)
                else:
                    initial = [b'{"type":"ERROR","object":%s}\n' % expired]
                    next_rv = -1  # end after the error event
            else:
                next_rv = int(rv_param) + 1
            drop_gen, bookmark_gen, error_gen = (
                self._drop_gen,
                self._bookmark_gen,
                self._error_gen,
            )
            if refusal is None:
                self._open_watches += 1
        if refusal is not None:
            self._record("GET", path, query, refusal[0], arrived, handler.user_agent)
            handler.send_bytes(*refusal)
            return
        self._record("GET", path, query, 200, arrived, handler.user_agent)
        try:
            handler.start_chunked()
            if initial:
                handler.write_chunk(b"".join(initial))
            if next_rv < 0:
                handler.end_chunked()
                return
            next_bookmark = (
                time.monotonic() + self.bookmark_interval
                if bookmarks and self.bookmark_interval
                else None
            )
            while True:
                lines: list[bytes] = []
                with self._cond:
                    while True:
                        now = time.monotonic()
                        if self._stopping or self._drop_gen != drop_gen:
                            handler.cut()
                            return
                        if self._error_gen != error_gen:
                            lines.append(self._error_event)
                            break
                        if self._rv >= next_rv or now >= deadline:
                            break
                        if bookmarks and self._bookmark_gen != bookmark_gen:
                            break
                        if next_bookmark is not None and now >= next_bookmark:
                            break
                        if handler.client_gone():
                            handler.close_connection = True
                            return
                        wake = deadline if next_bookmark is None else min(deadline, next_bookmark)
                        # Wake now and then to notice a client that went away, as Go's server
                        # does; otherwise an idle watch would count as open until it times out.
                        self._cond.wait(min(wake - now, _LIVENESS_POLL))
                    if not lines:
                        index = max(0, next_rv - self._log_start)
                        if next_rv < self._log_start:
                            # This watcher fell behind the event log's trimming.
                            expired = status_body(410, f"too old resource version: {next_rv - 1}")
                            lines.append(b'{"type":"ERROR","object":%s}\n' % expired)
                        else:
                            for event in self._log[index:]:
                                if event.resource is resource and (
                                    namespace is None or event.namespace == namespace
                                ):
                                    lines.append(_event_line(event.type, event.data))
                            next_rv = self._rv + 1
                            want_bookmark = bookmarks and (
                                self._bookmark_gen != bookmark_gen
                                or (next_bookmark is not None and now >= next_bookmark)
                            )
                            if want_bookmark:
                                lines.append(_bookmark_line(resource, self._rv))
                                bookmark_gen = self._bookmark_gen
                                if next_bookmark is not None and self.bookmark_interval:
                                    next_bookmark = now + self.bookmark_interval
                    ended = bool(lines) and lines[-1].startswith(b'{"type":"ERROR"')
                if lines:
                    handler.write_chunk(b"".join(lines))
                if ended or time.monotonic() >= deadline:
                    handler.end_chunked()
                    return
        except OSError:
            handler.close_connection = True
        finally:
            with self._cond:
                self._open_watches -= 1


def _make_handler(server: FakeApiServer) -> type[_Handler]:
    class BoundHandler(_Handler):
        api = server

    return BoundHandler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"
    api: FakeApiServer

    def setup(self) -> None:
        super().setup()
        with self.api._cond:
            self.api._connections.add(self.connection)

    def finish(self) -> None:
        with self.api._cond:
            self.api._connections.discard(self.connection)
        with contextlib.suppress(OSError):  # the client may be gone already
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: tests assert on request_log instead

    def do_GET(self) -> None:
        arrived = time.monotonic()
        parts = urlsplit(self.path)
        path = parts.path
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        api = self.api
        target = self._route(path, query)
        if isinstance(target, tuple) and isinstance(target[0], Resource):
            resource, namespace = target
            if query.get("watch") in ("1", "true"):
                api._serve_watch(self, (resource, namespace), path, query, arrived)
                return
            code, body = api._list(resource, namespace, query)
        else:
            code, body = target
        # Recorded before answering, so the log's order is the order clients saw answers in.
        api._record("GET", path, query, code, arrived, self.user_agent)
        self.send_bytes(code, body)

    def _route(
        self, path: str, query: dict[str, str]
    ) -> tuple[int, bytes] | tuple[Resource, str | None]:
        """The target of a request, or the error answer (status, body) it gets instead."""
        api = self.api
        if not api._authorised(self.headers.get("Authorization")):
            return 401, status_body(401, "Unauthorized")
        injected = api._injected_failure(path, query)
        if injected is not None:
            return injected, status_body(injected, f"injected failure {injected}")
        discovery = api._discovery(path)
        if discovery is not None:
            return discovery
        target = _parse_path(path)
        if target is None or not api._installed(target[0]):
            return 404, status_body(404, "the server could not find the requested resource")
        return target

    def do_POST(self) -> None:
        self._not_allowed()

    do_PUT = do_PATCH = do_DELETE = do_POST

    def _not_allowed(self) -> None:
        length = _int(self.headers.get("Content-Length"))
        if length:
            self.rfile.read(length)
        self.api._record(self.command, urlsplit(self.path).path, {}, 405)
        self.send_bytes(405, status_body(405, "the stand-in API server only serves GET"))

    # -- response helpers used by the server

    def send_bytes(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    @property
    def user_agent(self) -> str:
        return str(self.headers.get("User-Agent") or "")

    def client_gone(self) -> bool:
        """True when the client closed its side (readable, but nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def cut(self) -> None:
        """Close without the terminating chunk: the client sees a broken stream."""
        self.close_connection = True
        _cut(self.connection)


def _cut(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


def _parse_path(path: str) -> tuple[Resource, str | None] | None:
    segments = [s for s in path.split("/") if s]
    if len(segments) >= 2 and segments[0] == "api":
        group, version, rest = "", segments[1], segments[2:]
    elif len(segments) >= 3 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) == 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) != 1:
        return None
    resource = _BY_PATH.get((group, version, rest[0]))
    if resource is None or (namespace is not None and not resource.namespaced):
        return None
    return resource, namespace


def _resource(kind: str) -> Resource:
    try:
        return _BY_NAME[kind]
    except KeyError:
        raise KeyError(f"unknown kind {kind!r}") from None


def _normalise(resource: Resource, obj: dict[str, Any]) -> None:
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.object_kind or resource.kind)
    meta = obj.setdefault("metadata", {})
    if "name" not in meta:
        raise ValueError(f"{resource.kind} without metadata.name")
    if resource.namespaced:
        meta.setdefault("namespace", "default")
    else:
        meta.pop("namespace", None)
    meta.setdefault("uid", str(uuid.uuid4()))


def _key(resource: Resource, obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    if resource.namespaced:
        return f"{meta.get('namespace') or 'default'}/{meta['name']}"
    return str(meta["name"])


def _event_line(etype: str, data: bytes) -> bytes:
    return b'{"type":"%s","object":%s}\n' % (etype.encode(), data)


def _bookmark_line(resource: Resource, rv: int) -> bytes:
    obj = {
        "kind": resource.kind,
        "apiVersion": resource.api_version,
        "metadata": {"resourceVersion": str(rv)},
    }
    return _event_line("BOOKMARK", orjson.dumps(obj))


def _encode_continue(snapshot_id: int, offset: int) -> str:
    raw = orjson.dumps({"s": snapshot_id, "o": offset})
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, int]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["s"]), int(data["o"])
    except (binascii.Error, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(token) from exc


def _int(value: str | None) -> int:
    try:
        return int(value) if value else 0
    except ValueError:
        return 0
