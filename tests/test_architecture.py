"""The package's shape: one import name, dependencies pointing one way, no import cycles.

Imports are read from the source with ``ast`` (module level and inside
functions alike), so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where each installed package's source lives (pyproject's package-dir).
SOURCES = {
    "selfcrag": ROOT / "selfcrag",
    "selfcrag.graph": ROOT / "graph",
    "selfcrag.nodes": ROOT / "nodes",
    "selfcrag.prompts": ROOT / "prompts",
}

# Bottom to top: a module may import its own layer's package and the layers below, never above.
# graph/ holds both the state and context that nodes read and the wiring that imports the nodes,
# so its modules sit on two layers: graph.builder and graph.api are above the nodes, the rest below.
LAYERS: list[tuple[str, ...]] = [
    ("selfcrag.errors", "selfcrag.settings", "selfcrag.spans", "selfcrag.env_file"),
    ("selfcrag.files", "selfcrag.split", "selfcrag.embed", "selfcrag.user_cache"),
    # The engine (it takes points, never files or documents: see ENGINE_NEVER_IMPORTS), and a question's words in
    # the other language, made from the index's own terms (tokenize) and read by search.
    ("selfcrag.index", "selfcrag.crossing"),
    # The ingest runs the stages below in the order data flows and publishes through the engine.
    ("selfcrag.ingest",),
    ("selfcrag.search",),
    ("selfcrag.llm", "selfcrag.cite"),
    ("selfcrag.prompts",),
    ("selfcrag.heuristics",),
    (
        "selfcrag.graph.state",
        "selfcrag.graph.context",
        "selfcrag.graph.question",
        "selfcrag.graph.trace",
        "selfcrag.graph.resources",
        "selfcrag.graph.chat_step",
        "selfcrag.graph.memory",
    ),
    ("selfcrag.nodes",),
    ("selfcrag.graph", "selfcrag.graph.builder", "selfcrag.graph.api"),
    ("selfcrag.eval",),
    ("selfcrag.cli",),
    ("selfcrag",),  # the facade: `from selfcrag import ask`
]


# The rooms the index engine never imports: it is written through by the ingest, which reads, splits and embeds.
ENGINE_NEVER_IMPORTS = ("selfcrag.files", "selfcrag.split", "selfcrag.embed", "selfcrag.ingest")


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if package == "selfcrag" and parts[0] in ("graph", "nodes", "prompts"):
                continue
            name = ".".join([package, *parts])
            found[name.removesuffix(".__init__")] = path
    return found


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The selfcrag modules a file imports (``from a.b import c`` counts a.b.c when c is a module)."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets.add(node.module)
            targets.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in known}


def layer_of(module: str) -> int:
    best, depth = -1, -1
    for number, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and name.count(".") > depth:
                best, depth = number, name.count(".")
    assert best >= 0, f"{module} is on no layer: add it to LAYERS"
    return best


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def dependency_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(path, known) - {name} for name, path in found.items()}


def test_the_only_top_level_package_in_the_source_is_selfcrag() -> None:
    names = modules()
    assert names and all(name == "selfcrag" or name.startswith("selfcrag.") for name in names)
    assert "selfcrag.graph.builder" in names and "selfcrag.nodes.retrieve" in names


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in dependency_graph().items()
        for target in targets
        if layer_of(target) > layer_of(source) and package_of(target) != package_of(source)
    )
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_modules_import_each_other_without_a_cycle() -> None:
    graph = dependency_graph()
    graph["selfcrag"] = set()  # the facade imports the API; everything importing `selfcrag.x` passes through it
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_packages_import_each_other_without_a_cycle_once_graph_is_split_at_the_nodes() -> None:
    def unit(module: str) -> str:
        layer = layer_of(module)
        return f"{package_of(module)}@{layer}" if package_of(module) == "selfcrag.graph" else package_of(module)

    edges: dict[str, set[str]] = {}
    for source, targets in dependency_graph().items():
        if source == "selfcrag":
            continue
        edges.setdefault(unit(source), set()).update(unit(t) for t in targets if unit(t) != unit(source))
    order: list[str] = []
    remaining = {u: set(t) for u, t in edges.items()}
    while remaining:
        free = sorted(u for u, t in remaining.items() if not t & set(remaining))
        assert free, f"a cycle between packages among {sorted(remaining)}"
        order.extend(free)
        for u in free:
            del remaining[u]
    assert order.index("selfcrag.nodes") < order.index(f"selfcrag.graph@{layer_of('selfcrag.graph.builder')}")


def test_the_index_engine_imports_no_stage_of_the_ingest_nor_the_ingest() -> None:
    found = sorted(
        f"{source} -> {target}"
        for source, targets in dependency_graph().items()
        if package_of(source) == "selfcrag.index"
        for target in targets
        if any(target == room or target.startswith(room + ".") for room in ENGINE_NEVER_IMPORTS)
    )
    assert not found, "the engine imports the ingest's rooms:\n" + "\n".join(found)
    assert layer_of("selfcrag.ingest.run") > layer_of("selfcrag.index.writer")  # ingest -> index, never back


def annotated_fields(node: ast.ClassDef) -> set[str]:
    return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


def test_span_types_are_defined_only_in_spans() -> None:
    """A class holding a range of sentences (``first``..``last``) is a span type, and spans.py has them all.

    The one exception is the Python API's ``Citation``, the frozen view of ``spans.Citation`` users get.
    """
    found = sorted(
        f"{module}.{node.name}"
        for module, path in modules().items()
        if module != "selfcrag.spans"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and {"first", "last"} <= annotated_fields(node)
    )
    assert found == ["selfcrag.graph.api.Citation"], "span types outside selfcrag/spans.py: " + ", ".join(found)


def test_the_public_citation_has_exactly_the_fields_of_the_stored_one() -> None:
    from selfcrag import Citation, spans

    assert {f.name for f in dataclasses.fields(Citation)} == set(spans.Citation.__required_keys__)
