"""The import graph keeps its layers: kernel <- wings <- core's apps, core <- paper packages.

Every import counts, module-level, inside functions and under ``TYPE_CHECKING``: a lazy import
is still an arrow. The picture and the reasons are in docs/architecture.md.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORE = "aworld_rl_core"

KERNEL = frozenset(
    {
        "",  # aworld_rl_core/__init__.py
        "allocator",
        "atomic",
        "benchmarking",
        "children",
        "cli",
        "config",
        "dry_run",
        "engine",
        "environment",
        "errors",
        "hookspecs",
        "losses",
        "records",
        "refs",
        "registry",
        "report",
        "resources",
        "runs",
        "segments",
        "tracking",
        "trainer_config",
    }
)
WINGS = frozenset({"models", "llm", "tooluse", "backends", "envs", "pipeline"})
APPS = frozenset({"recipes", "testing", "smoke", "plugin"})
LAYER = {**dict.fromkeys(KERNEL, 0), **dict.fromkeys(WINGS, 1), **dict.fromkeys(APPS, 2)}
LAYER_NAMES = ("kernel", "wing", "core app")


def _modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """Every module of ``known`` that ``name`` (at ``path``) imports, with the line: module-level,
    in functions, under TYPE_CHECKING, relative or absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno


def graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}, over every package's ``src/``."""
    paths: dict[str, Path] = {}
    for src in sorted(ROOT.glob("packages/*/src")):
        paths.update(_modules(src))
    known = set(paths)
    edges: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        out = edges.setdefault(name, {})
        for target, line in imports_of(name, path, known):
            out.setdefault(target, line)
    return edges


def _place(module: str) -> str:
    """The core part a module belongs to: its first name under ``aworld_rl_core``."""
    rest = module.removeprefix(CORE).lstrip(".")
    return rest.partition(".")[0]


def upward_arrows(edges: dict[str, dict[str, int]]) -> list[str]:
    arrows = []
    for source, targets in edges.items():
        for target, line in targets.items():
            src_pkg, dst_pkg = source.partition(".")[0], target.partition(".")[0]
            where = f"{source}:{line} imports {target}"
            if src_pkg == CORE and dst_pkg != CORE:
                arrows.append(f"{where}: core never imports a paper package")
            elif src_pkg != CORE and dst_pkg != CORE and src_pkg != dst_pkg:
                arrows.append(f"{where}: a paper package never imports another")
            elif src_pkg == dst_pkg == CORE:
                a, b = LAYER[_place(source)], LAYER[_place(target)]
                if b > a:
                    arrows.append(
                        f"{where}: a {LAYER_NAMES[a]} module imports a {LAYER_NAMES[b]} module"
                    )
            elif src_pkg != CORE and _place(target) == "testing" and ".tests" not in source:
                arrows.append(f"{where}: only tests import aworld_rl_core.testing")
    return sorted(arrows)


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _part_graph(edges: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Core's parts (``models``, ``tooluse``, ``runs``...) as nodes."""
    parts: dict[str, dict[str, int]] = {}
    for source, targets in edges.items():
        if not source.startswith(CORE):
            continue
        out = parts.setdefault(_place(source), {})
        for target in targets:
            if target.startswith(CORE) and _place(target) != _place(source):
                out.setdefault(_place(target), 0)
    return parts


def test_every_core_part_has_a_layer():
    """If this fails: a new module or sub-package of aworld_rl_core is in no layer; add it to
    KERNEL, WINGS or APPS here and to the picture in docs/architecture.md."""
    unplaced = sorted({_place(m) for m in graph() if m.startswith(CORE)} - set(LAYER))
    assert unplaced == []


def test_no_import_runs_back_up():
    """If this fails: a lower layer imports a higher one (the message names the line). Move the
    imported code down (a kernel module may not know a backend), or invert the arrow with a
    registration (the registry is the only wiring)."""
    assert upward_arrows(graph()) == []


def test_no_circle_between_modules():
    """If this fails: modules import each other, directly or around a loop (in-function imports
    count). Move what both need into a small module below both."""
    assert circles(graph()) == []


def test_no_circle_between_core_parts():
    """If this fails: two of core's parts (``models``, ``tooluse``...) import each other; one of
    them must sit below the other (see docs/architecture.md)."""
    assert circles(_part_graph(graph())) == []


def _fake_tree(tmp_path: Path, files: dict[str, str]) -> dict[str, dict[str, int]]:
    paths = {}
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        paths[name] = path
    known = set(paths)
    return {n: dict(imports_of(n, p, known)) for n, p in paths.items()}


def test_the_check_sees_in_function_imports_and_circles(tmp_path):
    """If this fails: the checker itself went blind (it must see lazy imports and loops)."""
    edges = _fake_tree(
        tmp_path,
        {
            "aworld_rl_core.records.rows": (
                "def f():\n    from aworld_rl_core.backends.verl import specs\n"
            ),
            "aworld_rl_core.backends.verl": "",
            "aworld_rl_core.backends.verl.specs": "from . import judge\n",
            "aworld_rl_core.backends.verl.judge": "import aworld_rl_core.backends.verl.specs\n",
        },
    )
    assert upward_arrows(edges) == [
        "aworld_rl_core.records.rows:2 imports aworld_rl_core.backends.verl.specs: "
        "a kernel module imports a wing module"
    ]
    assert circles(edges) == [
        ["aworld_rl_core.backends.verl.judge", "aworld_rl_core.backends.verl.specs"]
    ]


@pytest.mark.parametrize(
    ("source", "text", "why"),
    [
        ("aworld_rl_core.cli", "import aworld_rl_funreason\n", "core never imports a paper"),
        ("aworld_rl_rag_r1.env", "from aworld_rl_v2p import x\n", "never imports another"),
    ],
)
def test_the_check_sees_packages_crossing(tmp_path, source, text, why):
    """If this fails: the checker no longer tells core and paper packages apart."""
    edges = _fake_tree(tmp_path, {source: text, "aworld_rl_funreason": "", "aworld_rl_v2p": ""})
    assert len(upward_arrows(edges)) == 1 and why in upward_arrows(edges)[0]


def test_docs_architecture_names_every_layer_part():
    """If this fails: docs/architecture.md no longer matches the layers checked here; update
    its table (a part added to KERNEL, WINGS or APPS belongs in the picture too)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = {
        "kernel": KERNEL - {""},
        "wings": WINGS,
        "core apps": APPS,
    }
    for layer, parts in rows.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {layer} |"))
        assert set(re.findall(r"`(\w+)`", row.split("|")[2])) == parts, layer
