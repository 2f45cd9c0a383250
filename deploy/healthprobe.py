"""Exec probe for the queue-extender container: GET one health URL on the pod's loopback.

Why an exec probe: the kubelet sends httpGet and tcpSocket probes to the pod IP, but the
extender binds 127.0.0.1 by default, so that only kube-scheduler (same pod, same network
namespace) can call its verbs. This script runs inside the pod's network namespace and reaches
the loopback listener in every layout (plain HTTP, TLS, mutual TLS) with one code path.

It is stdlib only and is run as ``python3 -I -S``: no site-packages, no environment hooks, so
a broken application install cannot make the probe itself lie. The image copies it to
/opt/queue-extender/healthprobe.py.

Exit status 0 when the answer is HTTP 200; 1 otherwise (another status, refused, timeout, TLS
failure), with one line on stderr that the kubelet shows in the pod's events.
"""

from __future__ import annotations

import argparse
import ssl
import sys
import urllib.error
import urllib.request

#: How much of a failing answer to quote: /readyz puts its reason in the body.
_REASON_BYTES = 300


def _opener(url: str, cert: str | None, key: str | None) -> urllib.request.OpenerDirector:
    """An opener that never uses a proxy: a cluster-wide HTTP_PROXY must not capture loopback."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if url.startswith("https://"):
        # Loopback inside the pod: nothing can sit in between, and the serving certificate may
        # name only a DNS SAN, so the server is not verified. A client certificate is sent
        # when the extender demands one (mutual TLS).
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if cert:
            context.load_cert_chain(cert, key)
        handlers.append(urllib.request.HTTPSHandler(context=context))
    return urllib.request.build_opener(*handlers)


def _reason(body: bytes) -> str:
    text = body[:_REASON_BYTES].decode("utf-8", "replace")
    return " ".join(text.split())


def probe(url: str, timeout: float, cert: str | None = None, key: str | None = None) -> str:
    """Return "" when ``url`` answers 200, else a one-line reason."""
    try:
        with _opener(url, cert, key).open(url, timeout=timeout) as response:
            status = int(response.status)
            body = response.read(_REASON_BYTES)
    except urllib.error.HTTPError as exc:
        return f"{url}: HTTP {exc.code}: {_reason(exc.read(_REASON_BYTES))}"
    except (OSError, ValueError) as exc:
        return f"{url}: {exc}"
    if status != 200:
        return f"{url}: HTTP {status}: {_reason(body)}"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="GET a health URL; exit 0 on HTTP 200.")
    parser.add_argument("url", help="e.g. http://127.0.0.1:8888/readyz")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")
    parser.add_argument("--cert", help="client certificate (PEM) for mutual TLS")
    parser.add_argument("--key", help="client key (PEM) for mutual TLS")
    args = parser.parse_args(argv)
    if bool(args.cert) != bool(args.key):
        parser.error("--cert and --key go together")
    reason = probe(args.url, args.timeout, args.cert, args.key)
    if reason:
        print(reason, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
