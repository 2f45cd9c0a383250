"""The status page's HTML: server-rendered, self-contained (inline CSS and a few lines of
JS, nothing fetched from elsewhere), so it works in an air-gapped cluster.

It shows what the read-only API shows and nothing more: the queue tree with allocated,
deserved and capability as bars (a parent queue's bar is what its whole branch holds),
overused queues marked, each queue's pending jobs with the reason they wait, and the last
evictions when a reclaim loop records them.

Every link is relative to the page: behind the API server's service proxy
(``/api/v1/namespaces/NS/services/NAME:PORT/proxy/``) an absolute ``/queues/x`` would leave
the proxy. The index sits at the root, a queue's page one level down (``queues/NAME``).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from app.api.port import RecentEviction
from scheduler_core.insight.amounts import Amounts, describe
from scheduler_core.insight.derivation import Derivation
from scheduler_core.insight.pending import PendingPage
from scheduler_core.insight.queues import QueueView, held_with_children

REFRESH_SECONDS = 5
PENDING_SHOWN = 5

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{background:#1d3557;color:#fff;padding:10px 20px;display:flex;gap:20px;align-items:center}
header h1{font-size:18px;margin:0}header a{color:#fff}main{padding:12px 20px}
table{border-collapse:collapse;width:100%;background:#fff;margin-bottom:18px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{background:#eef1f4;font-weight:600}tr.overused{background:#fff3f0}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;color:#fff}
.over{background:#c0392b}.closed{background:#7f8c8d}.ok{background:#2e8b57}
.bar{position:relative;height:12px;width:220px;background:#e9ecef;border-radius:3px;margin:2px 0}
.bar .alloc{position:absolute;left:0;top:0;bottom:0;background:#457b9d;border-radius:3px}
.bar .alloc.over{background:#c0392b}
.bar .des{position:absolute;top:-2px;bottom:-2px;width:2px;background:#1d232b}
.dim{font-size:12px;color:#555}.reason{color:#7a2e0e}.muted{color:#777}
.legend span{margin-right:12px}code{font-size:12px}
"""

_SCRIPT = """
(function(){
  var box=document.getElementById('auto');
  function tick(){
    if(!box||!box.checked){return;}
    fetch(location.href,{headers:{'Accept':'text/html'}}).then(function(r){
      if(!r.ok){throw new Error(r.status);}return r.text();
    }).then(function(t){
      var doc=new DOMParser().parseFromString(t,'text/html');
      var fresh=doc.querySelector('main');
      if(fresh){document.querySelector('main').replaceWith(fresh);}
      document.getElementById('stamp').textContent=new Date().toLocaleTimeString();
    }).catch(function(){});
  }
  setInterval(tick, REFRESH_MS);
})();
""".replace("REFRESH_MS", str(REFRESH_SECONDS * 1000))


def _page(title: str, body: str, root: str) -> str:
    """``root``: the way from this page back to the root ("" at the root, "../" one level
    down)."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f'<header><h1><a href="{root or "./"}">kube-queue-extender</a></h1>'
        f"<span>{escape(title)}</span>"
        "<label><input type=checkbox id=auto checked> auto-refresh</label>"
        "<span class=dim>updated <span id=stamp>now</span></span>"
        f'<a href="{root}api/v1/queues">JSON</a></header>'
        f"<main>{body}</main><script>{_SCRIPT}</script></body></html>"
    )


def _bars(view: QueueView, branch: Amounts | None = None) -> str:
    """One bar per dimension the queue deserves or holds: the fill is allocated (``branch``,
    what the queue and its children hold, for a parent queue), the mark is deserved, the full
    width is the capability (or the largest of the three)."""
    allocated = (branch if branch is not None else view.allocated) or {}
    held = "held with its children" if branch is not None else "held"
    deserved = view.deserved or {}
    capability = view.real_capability or view.capability or {}
    names = [
        n
        for n in dict.fromkeys([*deserved, *allocated])
        if (deserved.get(n) or 0) or (allocated.get(n) or 0)
    ]
    rows = []
    for name in names:
        used = allocated.get(name) or 0.0
        fair = deserved.get(name) or 0.0
        cap = capability.get(name)
        scale = max(used, fair, cap if cap is not None else 0.0) or 1.0
        over = " over" if fair and used > fair else ""
        rows.append(
            f"<div class=dim>{escape(name)}: {_one(name, used)} {held}, "
            f"{_one(name, fair)} deserved"
            f"{'' if cap is None else ', cap ' + _one(name, cap)}</div>"
            f'<div class=bar title="{escape(name)}"><div class="alloc{over}" '
            f'style="width:{min(used / scale, 1) * 100:.1f}%"></div>'
            f'<div class=des style="left:{min(fair / scale, 1) * 100:.1f}%"></div></div>'
        )
    return "".join(rows) or "<span class=muted>nothing deserved or held</span>"


def _one(name: str, value: float | None) -> str:
    return describe({name: value}).split(" ", 1)[1]


def _state(view: QueueView) -> str:
    badges = []
    if view.state != "Open":
        badges.append(f"<span class='badge closed'>{escape(view.state)}</span>")
    if view.overused:
        badges.append("<span class='badge over'>overused</span>")
    return " ".join(badges) or "<span class='badge ok'>ok</span>"


def _pending_list(page: PendingPage | None, shown: int) -> str:
    if page is None or not page.jobs:
        return "<span class=muted>none</span>"
    items = "".join(
        f"<li><code>{escape(job.job)}</code>{_domain_badge(job.topology)} "
        f"<span class=reason>{escape(job.reason)}</span></li>"
        for job in page.jobs[:shown]
    )
    more = f"<li class=muted>… {page.total - shown} more</li>" if page.total > shown else ""
    return f"<ol>{items}{more}</ol>"


def _domain_badge(topology: str) -> str:
    """A topology gang's network domain next to its name ("" for a job that asks none)."""
    return f" <span class=dim>domain {escape(topology)}</span>" if topology else ""


def _tree(views: Sequence[QueueView]) -> list[tuple[int, QueueView]]:
    """Depth-first by parent, so children sit under their parent; orphans at the top."""
    by_name = {v.name: v for v in views}
    out: list[tuple[int, QueueView]] = []

    def visit(view: QueueView, depth: int) -> None:
        out.append((depth, view))
        for child in view.children:
            if child in by_name:
                visit(by_name[child], depth + 1)

    for view in views:
        if view.parent is None or view.parent not in by_name:
            visit(view, 0)
    return out


def render_index(
    views: Sequence[QueueView],
    pending: dict[str, PendingPage],
    evictions: Sequence[RecentEviction] | None,
) -> str:
    branches = held_with_children(list(views))
    rows = []
    for depth, view in _tree(views):
        rows.append(
            f"<tr class='queue{' overused' if view.overused else ''}' data-queue="
            f"'{escape(view.name)}'><td style='padding-left:{8 + depth * 18}px'>"
            f"<a href='queues/{escape(view.name)}'>{escape(view.name)}</a></td>"
            f"<td>{_state(view)}</td><td>{view.weight}{_factor(view)}</td>"
            f"<td>{_bars(view, branches.get(view.name))}</td>"
            f"<td>{view.share:.2f}</td><td>{view.jobs} / {view.pending_jobs}</td>"
            f"<td>{_pending_list(pending.get(view.name), PENDING_SHOWN)}</td></tr>"
        )
    table = (
        "<table id=queues><tr><th>Queue</th><th>State</th><th>Weight</th>"
        "<th>Allocated / deserved / capability</th><th>Share</th><th>Jobs / pending</th>"
        "<th>Pending jobs, in serving order, and why they wait</th></tr>"
        + "".join(rows)
        + "</table>"
    )
    return _page("queues", table + _evictions(evictions), root="")


def _factor(view: QueueView) -> str:
    """`` ×0.5`` after the weight when its past usage moved it."""
    history = view.history
    if history is None or not history.adjusted or history.factor is None:
        return ""
    return f" <span class=muted title='for its past usage'>&times;{history.factor:.3g}</span>"


def _evictions(evictions: Sequence[RecentEviction] | None) -> str:
    if evictions is None:
        return (
            "<h3>Last evictions</h3><p class=muted>No reclaim loop runs in this process: "
            "kube-scheduler evicts the victims the preempt verb names.</p>"
        )
    if not evictions:
        return "<h3>Last evictions</h3><p class=muted>none yet</p>"
    rows = "".join(
        f"<tr><td>{escape(e.at)}</td><td><code>{escape(e.pod)}</code></td>"
        f"<td>{escape(e.queue or '')}</td><td>{escape(e.reason)}</td></tr>"
        for e in evictions
    )
    return (
        "<h3>Last evictions</h3><table id=evictions><tr><th>When</th><th>Pod</th>"
        f"<th>Queue</th><th>Why</th></tr>{rows}</table>"
    )


def _amount_cell(values: Amounts | None) -> str:
    return escape(describe(values)) if values is not None else "<span class=muted>-</span>"


def _derivation(derivation: Derivation | None) -> str:
    if derivation is None:
        return ""
    rows = "".join(
        f"<tr><td>{escape(r.label)}</td><td>{_amount_cell(r.remaining)}</td>"
        f"<td>{'' if r.total_weight is None else f'{r.weight}/{r.total_weight}'}</td>"
        f"<td>{_amount_cell(r.offered)}</td><td>{_amount_cell(r.deserved)}</td>"
        f"<td>{escape(', '.join(f'{k}: {chr(44).join(v)}' for k, v in r.clamped.items()))}"
        f"</td><td>{escape(r.met)}</td></tr>"
        for r in derivation.rounds
    )
    return (
        f"<h3>Deserved derivation ({escape(derivation.plugin or 'none')})</h3>"
        f"<p>{escape(derivation.summary)}</p><table id=derivation><tr><th>Step</th>"
        "<th>Remaining</th><th>Weight</th><th>Offered</th><th>Deserved</th><th>Clamped</th>"
        f"<th>Met</th></tr>{rows}</table>"
    )


def _history_facts(view: QueueView) -> list[tuple[str, str]]:
    """The queue's usage over time and what it did to the deserved share."""
    history = view.history
    if history is None:
        return []
    usage = ", ".join(
        f"{name} {value:.4g}" for name, value in history.usage.items() if value is not None
    )
    facts = [
        (
            f"Usage (amount-hours, half-life {escape(history.half_life)})",
            escape(usage) or "<span class=muted>none</span>",
        )
    ]
    if history.adjusted and history.factor is not None:
        facts.append(
            (
                "Usage share / weight share",
                f"{history.usage_share or 0:.3f} / {history.weight_share or 0:.3f} "
                f"(weight &times;{history.factor:.3g})",
            )
        )
        facts.append(("Weighted deserved", _amount_cell(history.weighted_deserved)))
    else:
        facts.append(("Weighted deserved", "same as deserved (nothing contended to adjust)"))
    return facts


def render_queue(view: QueueView, pending: PendingPage, branch: Amounts | None = None) -> str:
    """``branch``: what the queue and its children hold, for a queue that has children."""
    parent = f"<a href='{escape(view.parent)}'>{escape(view.parent)}</a>" if view.parent else "-"
    facts = [
        ("State", _state(view)),
        ("Parent", parent),
        ("Weight", str(view.weight)),
        ("Guarantee", _amount_cell(view.guarantee)),
        ("Capability", _amount_cell(view.capability)),
        ("Real capability", _amount_cell(view.real_capability)),
        ("Request", _amount_cell(view.request)),
        ("Allocated", _amount_cell(view.allocated)),
        *([("Held with its children", _amount_cell(branch))] if branch is not None else []),
        ("Assumed", f"{_amount_cell(view.assumed)} ({view.assumed_pods} pods)"),
        ("Deserved", _amount_cell(view.deserved)),
        ("Share", f"{view.share:.3f}"),
        ("Bars", _bars(view, branch)),
    ]
    if view.devices:
        held = ", ".join(f"{name}: {count}" for name, count in sorted(view.devices.items()))
        facts.append(("Devices (DRA claims, not in the share)", escape(held)))
    facts.extend(_history_facts(view))
    table = (
        "<table id=queue>"
        + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
        + "</table>"
    )
    # The network domain column only where some pending gang asks for one.
    domains = any(j.topology for j in pending.jobs)
    rows = "".join(
        f"<tr><td>{j.position}</td><td><code>{escape(j.job)}</code></td><td>{j.priority}</td>"
        f"<td>{j.ready}/{j.min_available}</td><td>{j.pending}</td>"
        + (f"<td>{escape(j.topology) or '-'}</td>" if domains else "")
        + f"<td class=reason>{escape(j.reason)}</td></tr>"
        for j in pending.jobs
    )
    jobs = (
        f"<h3>Pending jobs ({pending.total})</h3><table id=pending><tr><th>#</th><th>Job</th>"
        f"<th>Priority</th><th>Ready/min</th><th>Pending pods</th>"
        + ("<th>Network domain</th>" if domains else "")
        + f"<th>Why it waits</th></tr>{rows}</table>"
    )
    return _page(f"queue {view.name}", table + _derivation(view.derivation) + jobs, root="../")


def render_missing(message: str) -> str:
    """For ``queues/NAME``, one level below the root."""
    return _page(
        "not found", f"<p>{escape(message)}</p><p><a href='../'>all queues</a></p>", root="../"
    )
