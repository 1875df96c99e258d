"""Os notebooks são versionados limpos (sem saídas), numerados, com o kernel certo, o labutils
importado antes do Ray e as seções opcionais no fim (depois delas, só o encerramento): quem as
pula roda o começo da execução inteira, que o nbval confere."""

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_notebooks_are_clean_numbered_and_use_python3():
    """Sem saídas, e sem marca do nbval que compara a saída de uma célula (sem saída guardada,
    ela não confere nada: o que a lição afirma é um ``assert``)."""
    dirty, marks = [], []
    for nb in NOTEBOOKS:
        assert re.match(r"^\d{2}_[a-z0-9_]+\.ipynb$", nb.name), nb.name
        content = json.loads(nb.read_text())
        assert content["metadata"]["kernelspec"]["name"] == "python3", nb.name
        for cell in content["cells"]:
            if cell["cell_type"] != "code":
                continue
            if cell["outputs"] or cell["execution_count"]:
                dirty.append(nb.name)
            tags = cell.get("metadata", {}).get("tags", [])
            if "nbval-check-output" in tags or "NBVAL_CHECK_OUTPUT" in "".join(cell["source"]):
                marks.append(nb.name)
    assert not dirty, f"notebooks com saídas (limpe antes de versionar): {sorted(set(dirty))}"
    assert not marks, f"comparação de saída que não compara nada: {sorted(set(marks))}"


IMPORT_RAY = re.compile(r"^\s*(import ray\b|from ray\b)", re.M)
IMPORT_LABUTILS = re.compile(r"^\s*(import labutils\b|from labutils\b)", re.M)


def first_import(cells: list[dict], pattern: re.Pattern) -> tuple[int, int] | None:
    """``(célula, posição na célula)`` do primeiro import que casa com ``pattern``."""
    for index, cell in enumerate(cells):
        source = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
        found = pattern.search(source)
        if found:
            return index, found.start()
    return None


def test_labutils_is_imported_before_ray():
    """O ``import labutils`` liga o token (``RAY_AUTH_MODE``) antes de o Ray ser carregado; o
    nbval não o pegaria (o conftest da raiz já exporta a variável para os kernels)."""
    wrong = []
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text())["cells"]
        ray, labutils = first_import(cells, IMPORT_RAY), first_import(cells, IMPORT_LABUTILS)
        if ray is not None and (labutils is None or labutils > ray):
            wrong.append(nb.name)
    assert not wrong, f"importe labutils antes do ray, numa célula própria (lição 04): {wrong}"


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
