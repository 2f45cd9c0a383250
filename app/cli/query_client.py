"""Where the query commands get their answers: a running server (HTTP(S), bearer token,
client certificates), the API server's service proxy to the extender (kubeconfig), or an
offline engine over a cluster file (the same engine ``simulate`` runs)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Protocol

from app.api import models
from scheduler_core.insight.lookup import NotFoundError
from scheduler_core.insight.whatif import WhatIfError

Doc = dict[str, Any]


class QueryError(Exception):
    """An answer the command reports as one line (exit code 1)."""


class Client(Protocol):
    def get(self, path: str) -> Doc: ...

    def post(self, path: str, body: Doc) -> Doc: ...

    def close(self) -> None:
        """Give back what the client holds between calls (the offline engine's parts)."""


def api_path(*parts: str) -> str:
    return "/api/v1/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)


class _OverHttp:
    """A client whose every question is one HTTP request (``_call``) on a connection of its
    own: nothing is held between calls."""

    def _call(self, method: str, path: str, body: Doc | None) -> Doc:
        raise NotImplementedError

    def get(self, path: str) -> Doc:
        return self._call("GET", path, None)

    def post(self, path: str, body: Doc) -> Doc:
        return self._call("POST", path, body)

    def close(self) -> None:
        """Nothing to give back."""


class HttpClient(_OverHttp):
    """The API of a server reached directly (``--server``)."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        cacert: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        insecure: bool = False,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.context: ssl.SSLContext | None = None
        if self.base_url.startswith("https://"):
            context = ssl.create_default_context(cafile=cacert)
            if insecure:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            if cert:
                context.load_cert_chain(cert, key)
            self.context = context

    def _call(self, method: str, path: str, body: Doc | None) -> Doc:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as r:
                answer: Doc = json.loads(r.read())
                return answer
        except urllib.error.HTTPError as exc:
            raise QueryError(_error_text(exc.code, exc.read())) from None
        except (urllib.error.URLError, OSError) as exc:
            raise QueryError(f"cannot reach {self.base_url}: {exc}") from None


class KubeProxyClient(_OverHttp):
    """The API through the Kubernetes API server's service proxy
    (``/api/v1/namespaces/NS/services/NAME:PORT/proxy/...``), with the kubeconfig's
    credentials: what ``kubectl queue`` uses when no ``--server`` is given."""

    def __init__(self, service: str, kubeconfig: str | None, context: str | None) -> None:
        from kubernetes import client, config

        try:
            namespace, rest = service.split("/", 1)
            name, port = rest.rsplit(":", 1)
        except ValueError:
            raise QueryError(f"--service must be NAMESPACE/NAME:PORT, not {service!r}") from None
        try:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context
            )
        except Exception as exc:
            raise QueryError(f"cannot load the kubeconfig: {exc}") from None
        self.api = client.ApiClient()
        self.prefix = f"/api/v1/namespaces/{namespace}/services/{name}:{port}/proxy"

    def _call(self, method: str, path: str, body: Doc | None) -> Doc:
        """Through the client's host, TLS and auth (``param_serialize`` with the
        ``BearerToken`` setting, as the generated API classes do, so exec plugins apply)."""
        try:
            method, url, headers, data, _post = self.api.param_serialize(
                method,
                self.prefix + path,
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
            )
            rest = self.api.call_api(method, url, header_params=headers, body=data)
            response = rest.response
            raw: bytes = response.data
            status = int(response.status)
        except Exception as exc:
            raise QueryError(f"cannot reach the API server: {exc}") from None
        if status >= 400:
            raise QueryError(_error_text(status, raw))
        answer: Doc = json.loads(raw)
        return answer


class OfflineClient:
    """The same answers from an engine over a cluster file, in this process."""

    def __init__(self, cluster: str, conf: str | None) -> None:
        import argparse

        from app.cli.serve import backend_from_args
        from app.cli.serve_flags import add_serve_parser

        # The same defaults as `serve --cluster FILE`: the engine answers as the service would.
        parser = argparse.ArgumentParser(prog="queue-extender")
        add_serve_parser(parser.add_subparsers())
        argv = ["serve", "--cluster", cluster, *(["--conf", conf] if conf else [])]
        try:
            self.built = backend_from_args(parser.parse_args(argv))
        except ValueError as exc:
            raise QueryError(str(exc)) from None
        self.engine = self.built.backend

    def close(self) -> None:
        """Stop what the record started (a configuration watcher, when --conf is a file)."""
        self.built.close()

    def get(self, path: str) -> Doc:
        parts = [urllib.parse.unquote(p) for p in path.split("?")[0].split("/")[3:]]
        engine = self.engine
        try:
            if parts == ["queues"]:
                return models.document(models.QueueList, models.QueueListView(engine.queues()))
            if len(parts) == 2 and parts[0] == "queues":
                return models.document(models.Queue, engine.queue(parts[1]))
            if len(parts) == 3 and parts[0] == "queues" and parts[2] == "pending":
                return models.document(models.PendingPage, engine.pending(parts[1], 1000))
            if len(parts) == 4 and parts[0] == "pods" and parts[3] == "explain":
                return models.document(models.Explanation, engine.explain_pod(*parts[1:3]))
            if len(parts) == 4 and parts[0] == "podgroups" and parts[3] == "explain":
                return models.document(models.Explanation, engine.explain_podgroup(*parts[1:3]))
        except NotFoundError as exc:
            raise QueryError(str(exc)) from None
        raise QueryError(f"no such query: {path}")

    def post(self, path: str, body: Doc) -> Doc:
        request = models.WhatIfIn.model_validate(body).request()
        try:
            result = self.engine.whatif(request)()
        except WhatIfError as exc:
            raise QueryError(str(exc)) from None
        return models.document(models.WhatIfOut, result)


def _error_text(status: int, body: bytes | str) -> str:
    try:
        message = json.loads(body).get("Error")
    except (ValueError, AttributeError):
        message = None
    text = body.decode(errors="replace") if isinstance(body, bytes) else body
    return f"HTTP {status}: {message or text.strip()[:200] or 'no details'}"
