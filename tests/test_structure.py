"""The package's imports run one way, utils up to programs, and never in a circle.

Read from the source with `ast`, imports inside functions included: a lazy import is still a
dependency.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).parents[1] / "keras_linformer"
# Each part may import the parts before it, never one after it.
ORDER = ("utils", "layers", "data", "models", "training", "export", "programs")
# Files at the top of the package: the serialization helper is used by every layer.
LEVEL_OF_TOP = {"api_export": 0}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(name):
    """The package's module that `name` names (a module, or a name inside one), or None."""
    parts = name.split(".")
    while parts:
        base = PACKAGE.parent.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


def imports():
    """`{module: {imported module of the package}}`."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found |= {resolve(name) for name in names if name.startswith("keras_linformer")}
        graph[module_name(path)] = found - {None, module_name(path)}
    return graph


def level(module):
    parts = module.split(".")
    if len(parts) == 1:
        return None  # The package's face: it may name any part.
    if parts[1] in LEVEL_OF_TOP:
        return LEVEL_OF_TOP[parts[1]]
    return ORDER.index(parts[1])


def test_no_module_imports_a_later_part_of_the_package():
    backwards = [
        f"{module} -> {target}"
        for module, targets in sorted(imports().items())
        for target in sorted(targets)
        if level(module) is not None and level(target) is not None
        and level(target) > level(module)
    ]
    assert backwards == []


def test_no_modules_import_each_other_in_a_circle():
    graph = imports()
    circles, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []
