"""docs/architecture.md stays true: every room its tables name is a package or module of the
project, every file a row says its room holds is in that room, every path it or the
assumed-pod page names exists (and every function the page's walk names is in its module),
and every import rule it states (a table row's "may import", a bullet of its import rules)
is checked by one of the import-linter contracts in pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"
CODE = re.compile(r"`([^`]+)`")
#: A file or folder as the tables name them: ``keeper.py``, ``predicates/``, ``actions/util/``.
FILE = re.compile(r"^[\w/]+(\.py|/)$")


def rows() -> list[tuple[list[Path], list[str]]]:
    """Each table row's rooms (resolved in the repository) and the files its "holds" cell
    names."""
    found: list[tuple[list[Path], list[str]]] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        rooms = []
        for name in CODE.findall(cells[0]):
            base = REPO if name.startswith("app/") else REPO / "scheduler_core"
            rooms.append(base / name)
        files = [token for token in CODE.findall(cells[1]) if FILE.match(token)]
        found.append((rooms, files))
    return found


ROWS = rows()


def test_the_tables_are_found() -> None:
    assert len(ROWS) >= 15  # the engine's rooms and app's


@pytest.mark.parametrize(("rooms", "files"), ROWS, ids=lambda x: str(x)[:60])
def test_every_room_exists_and_holds_the_files_its_row_names(
    rooms: list[Path], files: list[str]
) -> None:
    for room in rooms:
        assert room.exists(), f"{room.relative_to(REPO)} named in docs/architecture.md is gone"
    folders = [room for room in rooms if room.is_dir()]
    for name in files:
        target = name.rstrip("/")
        hits = [
            hit
            for folder in folders
            for hit in [folder / target, folder.parent / target, *folder.rglob(target)]
            if hit.exists()
        ]
        where = ", ".join(str(r.relative_to(REPO)) for r in rooms)
        assert hits, f"docs/architecture.md says {where} holds {name}, which is not there"


# --- the import rules the doc states are import-linter contracts ----------------------------

LIFECYCLE = REPO / "docs" / "assumed-pods.md"
PYPROJECT = REPO / "pyproject.toml"
ENGINE = "scheduler_core"
#: A doc's sentence rule: a bullet of the layering section, in one of the forms below.
NEVER = re.compile(r"^- (?P<sources>.+?) never imports? (?P<targets>.+?)\.?$")
ONLY = re.compile(r"^- only (?P<sources>.+?) imports? (?P<targets>.+?)\.?$")
NEITHER = re.compile(r"^- (?P<sources>.+?) import neither the other\b.*$")
ACYCLIC = re.compile(r"^- no import cycle between the modules of a package\.?$")


def contracts() -> list[dict[str, Any]]:
    """The import-linter contracts of the project's configuration."""
    with PYPROJECT.open("rb") as handle:
        found: list[dict[str, Any]] = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    return found


CONTRACTS = contracts()


def covers(module: str, name: str) -> bool:
    """Whether a contract naming `module` speaks of `name` (the module or one inside it)."""
    return name == module or name.startswith(module + ".")


def _layer_of(layers: list[str], name: str) -> tuple[int, str] | None:
    """The index of the layer holding `name` and the member of it that does."""
    for index, layer in enumerate(layers):
        for member in (m.strip() for m in layer.split("|")):
            if covers(member, name):
                return index, member
    return None


def forbidding(source: str, target: str) -> str | None:
    """The name of a contract that forbids `source` to import `target`, or None."""
    for contract in CONTRACTS:
        kind = contract["type"]
        if kind == "forbidden":
            if any(covers(m, source) for m in contract["source_modules"]) and any(
                covers(m, target) for m in contract["forbidden_modules"]
            ):
                return str(contract["name"])
        elif kind == "independence":
            owners = [m for m in contract["modules"] if covers(m, source) or covers(m, target)]
            if len(owners) == 2 and owners[0] != owners[1]:
                return str(contract["name"])
        elif kind == "layers":
            low, high = _layer_of(contract["layers"], source), _layer_of(contract["layers"], target)
            if low is None or high is None:
                continue
            # Higher layers come first; the members of one layer (``a | b``) are independent.
            if high[0] < low[0] or (high[0] == low[0] and high[1] != low[1]):
                return str(contract["name"])
    return None


def children(package: str) -> list[str]:
    """The modules and packages directly inside `package` (by the files on disk)."""
    folder = REPO.joinpath(*package.split("."))
    return sorted(
        f"{package}.{path.stem}"
        for path in folder.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__")
        or (path.is_dir() and (path / "__init__.py").exists())
    )


def room_module(name: str) -> str:
    """A room as the tables name it (``api/``, ``conf.py``, ``app/cli/``) as a module."""
    dotted = name.removesuffix("/").removesuffix(".py").replace("/", ".")
    return dotted if dotted.startswith("app") else f"{ENGINE}.{dotted}"


#: The rooms the tables name: what their rules speak of (``app.version`` is no room).
ROOMS = [
    room_module(name)
    for line in DOC.read_text(encoding="utf-8").splitlines()
    if len(cells := [c.strip() for c in line.strip().strip("|").split("|")]) == 3
    and cells[0].startswith("`")
    for name in CODE.findall(cells[0])
]
ENGINE_ROOMS = [room for room in ROOMS if room.startswith(ENGINE)]
APP_ROOMS = [room for room in ROOMS if room.startswith("app")]


def engine_layers() -> list[list[str]]:
    """The engine's rooms, top layer first, as the data-flow contract orders them."""
    for contract in CONTRACTS:
        if contract["type"] == "layers" and any(ENGINE in layer for layer in contract["layers"]):
            return [
                [m.strip() for m in layer.split("|")]
                for layer in contract["layers"]
                if layer.startswith(ENGINE)
            ]
    raise AssertionError("no layers contract orders the engine's rooms")


def below(room: str) -> set[str]:
    """The engine's rooms in layers under `room`'s."""
    layers = engine_layers()
    index = next(i for i, layer in enumerate(layers) if any(covers(m, room) for m in layer))
    return {m for layer in layers[index + 1 :] for m in layer}


def allowed(cell: str, rooms: list[str]) -> set[str] | None:
    """What a row's "may import" cell allows its rooms (None: everything), as modules."""
    listed = re.sub(r"\([^)]*\)", "", cell).split(";")[0].strip()
    in_app = rooms[0].startswith("app")
    if listed in ("everything", f"everything in `{ENGINE}`") and not in_app:
        return None if listed == "everything" else set(ENGINE_ROOMS)
    if listed == "everything":
        return None
    if listed == "nothing of ours":
        return set()
    if listed == "nothing of `app`":
        return set(ENGINE_ROOMS)
    if listed == "everything below it":
        return set.union(*(below(room) for room in rooms))
    if listed.endswith(" and below"):
        top = room_module(listed.removesuffix(" and below").strip("`") + "/")
        return {top} | below(top)
    found: set[str] = set()
    for word in (w.strip() for w in listed.split(",")):
        name = word.strip("`")
        if name == ENGINE:
            found |= set(ENGINE_ROOMS)
        elif name.startswith(f"{ENGINE}.") or name.startswith("app."):
            found.add(name)
        else:
            found.add(f"app.{name}" if in_app else f"{ENGINE}.{name}")
    return found


def table_rules() -> list[tuple[str, str, str]]:
    """(the rule as the doc words it, source, target) for every import a table row forbids:
    a room may import what its row allows and nothing else of ours."""
    pairs: list[tuple[str, str, str]] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        rooms = [room_module(name) for name in CODE.findall(cells[0])]
        rule = f"{cells[0]} may import {cells[2]}"
        may = allowed(cells[2], rooms)
        if may is not None:
            everything = ENGINE_ROOMS + APP_ROOMS if rooms[0].startswith("app") else ENGINE_ROOMS
            outside = [] if rooms[0].startswith("app") else ["app"]
            for source in rooms:
                for target in [*everything, *outside]:
                    inside = covers(source, target) or covers(target, source)
                    if not inside and not any(covers(m, target) for m in may):
                        pairs.append((rule, source, target))
        for extra in (part.strip() for part in cells[2].split(";")[1:]):
            pairs.extend(_extra_rule(rule, rooms, extra))
    return pairs


def _extra_rule(rule: str, rooms: list[str], extra: str) -> list[tuple[str, str, str]]:
    """What a row's sentence after the list forbids: "`x` imports no plugin", "imported only
    by `a` and the benchmarks"."""
    named = CODE.findall(extra)
    if extra.endswith("imports no plugin"):
        source = f"{ENGINE}.plugins.{named[0]}"
        plugins = [
            p
            for p in children(f"{ENGINE}.plugins")
            if p != source and not p.endswith((".util", ".fairshare"))
        ]
        return [(f"{rule}: {extra}", source, plugin) for plugin in plugins]
    if extra.startswith("imported only by"):
        sources = [room for room in [*APP_ROOMS, ENGINE] if room not in named]
        return [
            (f"{rule}: {extra}", source, target)
            for target in rooms
            for source in sources
            if not covers(target, source) and not covers(source, target)
        ]
    raise AssertionError(f"docs/architecture.md: cannot read the rule {extra!r} of {rule}")


def sentence_rules() -> list[tuple[str, str, str]]:
    """(rule, source, target) for every import the layering section's bullets forbid."""
    pairs: list[tuple[str, str, str]] = []
    text = DOC.read_text(encoding="utf-8").split("## The import rules", 1)[1].split("\n## ")[0]
    for line in (raw.strip() for raw in text.splitlines()):
        if not line.startswith("- "):
            continue
        if ACYCLIC.match(line):
            assert any(c["type"] == "acyclic_siblings" for c in CONTRACTS), line
            continue
        if match := ONLY.match(line):
            importers = CODE.findall(match["sources"])
            for target in CODE.findall(match["targets"]):
                package = target.rsplit(".", 1)[0]
                everyone = [*APP_ROOMS, *children(package), ENGINE]
                for source in everyone:
                    unrelated = not covers(target, source) and not covers(source, target)
                    if unrelated and not any(covers(i, source) for i in importers):
                        pairs.append((line, source, target))
            continue
        if match := NEITHER.match(line):
            first, second = CODE.findall(match["sources"])
            pairs += [(line, first, second), (line, second, first)]
            continue
        match = NEVER.match(line)
        assert match, f"docs/architecture.md: cannot read the import rule {line!r}"
        pairs += [
            (line, source, target)
            for source in CODE.findall(match["sources"])
            for target in CODE.findall(match["targets"])
        ]
    return pairs


def test_the_import_rules_are_found() -> None:
    assert len(table_rules()) > 100
    assert len(sentence_rules()) >= 6


@pytest.mark.parametrize("rules", [table_rules, sentence_rules], ids=["tables", "sentences"])
def test_every_import_rule_the_doc_states_is_an_import_linter_contract(
    rules: Callable[[], list[tuple[str, str, str]]],
) -> None:
    missing: dict[str, list[str]] = {}
    for rule, source, target in rules():
        if forbidding(source, target) is None:
            missing.setdefault(rule, []).append(f"{source} -> {target}")
    assert not missing, "docs/architecture.md states rules no contract checks:\n" + "\n".join(
        f"{rule}\n    unchecked: {', '.join(pairs)}" for rule, pairs in missing.items()
    )


@pytest.mark.parametrize(
    ("source", "target", "forbidden"),
    [
        pytest.param("scheduler_core.api", "scheduler_core.cache", True, id="api is plain data"),
        pytest.param("scheduler_core.cache", "scheduler_core.api", False, id="cache reads api"),
        pytest.param("scheduler_core.engine", "scheduler_core.cache", True, id="one layer, |"),
        pytest.param("app.verbs", "app.api", True, id="siblings"),
        pytest.param("scheduler_core.actions", "scheduler_core.plugins", True, id="independence"),
        pytest.param("app.cli", "app.backend.build", False, id="the entry point may"),
    ],
)
def test_the_contract_reader_knows_layers_siblings_and_forbidden_lists(
    source: str, target: str, forbidden: bool
) -> None:
    assert (forbidding(source, target) is not None) == forbidden


# --- every path and name the pages give exists -----------------------------------------------

#: A path as the pages write it: ``accounting/keeper.py``, ``app/cli/``, ``tests/builders.py``.
PATH = re.compile(r"^[\w./]+(\.py|/)$")
EVERY_PATH = {
    p.relative_to(REPO).as_posix() + ("/" if p.is_dir() else "")
    for top in ("app", ENGINE, "tests", "docs", "bench")
    for p in (REPO / top).rglob("*")
    if "__pycache__" not in p.parts
}


@pytest.mark.parametrize("page", [DOC, LIFECYCLE], ids=lambda p: p.name)
def test_every_module_path_a_page_names_exists(page: Path) -> None:
    named = {t for t in CODE.findall(page.read_text(encoding="utf-8")) if PATH.match(t)}
    gone = sorted(
        name
        for name in named
        if not name.startswith("/")
        and not any(p == name or p.endswith("/" + name) for p in EVERY_PATH)
    )
    assert not gone, f"{page.name} names paths that are not in the repository: {gone}"


def defined(source: str, dotted: str) -> bool:
    """Whether each part of `dotted` (``Class.method``, ``function``, ``CONSTANT``) is defined
    in `source`: a class, a function, or a name assigned or annotated."""
    return all(
        re.search(rf"^\s*(class|def) {part}\b|^\s*{part}\s*[:=]", source, re.MULTILINE)
        for part in dotted.split(".")
    )


def lifecycle_rows() -> list[tuple[str, list[str]]]:
    """The lifecycle page's walk: each step's module and the functions it names."""
    found: list[tuple[str, list[str]]] = []
    for line in LIFECYCLE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`") and cells[1].endswith(".py`"):
            found.append((cells[1].strip("`"), CODE.findall(cells[2])))
    return found


def test_the_lifecycle_walk_is_found_and_linked_from_the_architecture() -> None:
    assert len(lifecycle_rows()) >= 10
    assert "(assumed-pods.md)" in DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize(("module", "names"), lifecycle_rows(), ids=lambda x: str(x)[:50])
def test_every_function_the_lifecycle_walk_names_is_in_its_module(
    module: str, names: list[str]
) -> None:
    source = (REPO / module).read_text(encoding="utf-8")
    mentioned = CODE.findall(LIFECYCLE.read_text(encoding="utf-8"))
    everywhere = "\n".join(
        (REPO / m).read_text(encoding="utf-8") for m in mentioned if m.endswith(".py")
    )
    for name in names:
        assert defined(source, name) or defined(everywhere, name), (
            f"docs/assumed-pods.md: {name} is not in {module}"
        )
