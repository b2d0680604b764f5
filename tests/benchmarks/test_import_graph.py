"""The modules of benchmarks/ import each other without a cycle.

Read from the source (every import statement, those inside functions too,
where a late import would hide a cycle), so nothing is imported here.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "benchmarks"


def module_names():
    """{module name: path} of every module under benchmarks/."""
    names = {}
    for path in (ROOT / PACKAGE).rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def import_graph():
    """{module: {benchmarks modules it imports}}."""
    names = module_names()
    graph = {}
    for name, path in names.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from benchmarks import quality` imports the module benchmarks.quality.
                imported.update(f"{node.module}.{alias.name}" for alias in node.names
                                if f"{node.module}.{alias.name}" in names)
                imported.add(node.module)
        graph[name] = {m for m in imported if m in names and m != name}
    return graph


def find_cycle(graph):
    """A list of modules that import each other in a ring (first == last), or None."""
    state = {}  # module -> "open" while on the search path, "done" after.

    def visit(node, path):
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target, path + [target])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [node])
            if cycle:
                return cycle
    return None


def test_the_cycle_finder_finds_a_late_import_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_graph_reads_the_imports_of_every_module():
    graph = import_graph()
    assert "benchmarks.studies.runner" in graph["benchmarks.quality"]
    assert "benchmarks.harness.grid" in graph["benchmarks.inference"]


def test_benchmarks_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
