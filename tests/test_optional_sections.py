"""As seções opcionais ficam no fim de cada notebook (depois delas, só o encerramento): quem as pula
roda o começo da execução inteira, que o nbval confere."""

import ast
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def only_releases(source: str) -> bool:
    """Se a célula só encerra (``ray.shutdown()``, ``x.stop()``, talvez sob um ``if``)."""

    def releases(stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.If):
            return not stmt.orelse and all(releases(s) for s in stmt.body)
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        return (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and (ast.unparse(call.func) == "ray.shutdown" or call.func.attr == "stop")
            and not call.args
            and not call.keywords
        )

    return all(releases(stmt) for stmt in ast.parse(source).body)


def core_cells_after_optional(nb) -> list[int]:
    """As células principais depois de uma opcional que fazem mais que encerrar."""
    seen_optional = False
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if "opcional" in cell.metadata.get("tags", []):
            seen_optional = True
        elif seen_optional and not only_releases(cell.source):
            found.append(i)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_optional_sections_come_last(path):
    cells = core_cells_after_optional(nbformat.read(path, as_version=4))
    assert not cells, (
        f"{path.name}: as células principais {cells} vêm depois de uma seção opcional; "
        "leve a seção opcional para o fim (antes do encerramento)."
    )
