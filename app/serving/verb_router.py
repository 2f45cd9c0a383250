"""The verbs' own way in: kube-scheduler's calls are routed before FastAPI sees them.

kube-scheduler calls filter and prioritize for every pod, so whatever runs per request in
front of the verbs is paid per pod, on the cores kube-scheduler and the API server need.
FastAPI's way is long for a handler that reads raw bytes and answers pre-encoded bytes: its
own ``__call__``, the server-error middleware, the body cap (which the verbs are exempt
from, as they read within the same cap), authentication, the route scan, the exception
middleware, a ``Request`` and a ``Response`` object per call. ``ExtenderApp`` is FastAPI
with a router in front: a POST to a verb's exact path goes to that verb's own chain, which
keeps what must see every verb call and nothing else:

- the server-error handler (Starlette's ``ServerErrorMiddleware``, as FastAPI installs it):
  a failure no handler caught is answered 500 and raised on to the server, which logs it;
- authentication, when the service has any (the same backend and the same refusal as
  every other path);
- the verb's handler (``app.verbs.common.VerbHandler.asgi``), which reads the body within
  the cap (413 beyond it), times the call into the metrics and counts bad requests.

The listener guard is the protocol's (``app.serving.guard``) and sees every request before
any application does. Anything else (another method, another path, a mounted prefix) goes
through FastAPI as before, and the verbs' routes stay registered there for the OpenAPI
document.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from fastapi import FastAPI
from starlette.authentication import AuthenticationBackend
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.body import read_asgi_body
from app.http.errors import WireError, encode_error
from app.serving.security import unauthorized


class Verb(Protocol):
    """A verb's handler, with both ways in (``app.verbs.common.VerbHandler``)."""

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def respond(self, body: bytes) -> tuple[int, bytes]: ...


class ExtenderApp(FastAPI):
    """FastAPI with the verbs' router in front (``route_verbs`` fills it).

    ``lean_verbs`` (raw path -> handler) and ``lean_limit`` are what the verbs listener's
    protocol may answer itself, without this application (``app.serving.guard``): only
    paths authentication never guards, since only this router's chains keep it."""

    verb_apps: dict[str, ASGIApp]
    lean_verbs: dict[bytes, Verb]
    lean_limit: int

    def route_verbs(
        self,
        verbs: Mapping[str, Verb],
        auth: AuthenticationBackend | None,
        max_body_bytes: int,
        lean: Collection[str],
    ) -> None:
        """Each verb path's chain: the server-error handler, authentication when ``auth``
        is given, then the handler; and the paths of ``lean`` for the protocol."""
        apps: dict[str, ASGIApp] = {}
        for path, verb in verbs.items():
            app: ASGIApp = verb.asgi
            if auth is not None:
                app = AuthenticationMiddleware(app, backend=auth, on_error=unauthorized)
            apps[path] = ServerErrorMiddleware(app, debug=self.debug)
        self.verb_apps = apps
        # A request names a path in its raw form: only a path that needs no escaping can
        # be matched byte for byte; any other still reaches the router.
        self.lean_verbs = {
            p.encode("ascii"): v for p, v in verbs.items() if p in lean and _plain_path(p)
        }
        self.lean_limit = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            verb = self.verb_apps.get(scope["path"])
            if verb is not None:
                await verb(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _plain_path(path: str) -> bool:
    return path.isascii() and all(c.isalnum() or c in "/-._~" for c in path)


class NoopVerb:
    """POST /noop on the verbs' way: reads the body within the cap and answers ``{}``, so
    that it stays the floor a verb call is compared with (``bench/``)."""

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes

    def respond(self, body: bytes) -> tuple[int, bytes]:
        return 200, b"{}"

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await read_asgi_body(scope, receive, self.max_body_bytes)
            status, body = 200, b"{}"
        except WireError as exc:
            status, body = exc.status, encode_error(str(exc))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-length", b"%d" % len(body)),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
