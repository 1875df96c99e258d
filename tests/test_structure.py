"""A forma do labutils: sem círculos de import e um só leitor do ambiente (``labutils.config``)."""

import ast
import graphlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "labutils"
MODULES = sorted(PACKAGE.rglob("*.py"))
#: leituras do ambiente: `os.environ.get`, `os.getenv`, `os.environ[...]` lido, `in os.environ`,
#: cópias (`dict(os.environ)`, `{**os.environ}`)
ENV_READ = re.compile(
    r"os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]+\](?!\s*=[^=])|in os\.environ"
    r"|dict\(os\.environ\)|\*\*os\.environ"
)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def labutils_imports(path: Path, known: set[str]) -> set[str]:
    """Módulos do labutils que ``path`` importa (no topo ou dentro de funções)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("labutils")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("labutils"):
                found.add(node.module)
                # `from labutils import data` importa o submódulo labutils.data
                found |= {f"{node.module}.{a.name}" for a in node.names}
    return {name for name in found if name in known}


def find_cycle(package: Path) -> list[str] | None:
    """Um círculo de imports entre módulos de ``package`` (mesmo dentro de funções), ou ``None``;
    um ``__init__`` que importa os próprios submódulos para reexportá-los não conta."""
    known = {module_name(p, package) for p in package.rglob("*.py")}
    graph = {}
    for p in package.rglob("*.py"):
        name = module_name(p, package)
        deps = labutils_imports(p, known) - {name, "labutils"}
        graph[name] = {d for d in deps if not name.startswith(d + ".")}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:
        return err.args[1]
    return None


@pytest.mark.parametrize(
    "path", [p for p in MODULES if p.name != "config.py"], ids=lambda p: module_name(p)
)
def test_only_config_reads_the_environment(path):
    hits = [
        f"linha {n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ENV_READ.search(line)
    ]
    assert not hits, f"{module_name(path)} lê o ambiente (use labutils.config): {hits}"


def test_import_graph_has_no_cycles():
    cycle = find_cycle(PACKAGE)
    assert cycle is None, "círculo de imports: " + " → ".join(cycle or [])
