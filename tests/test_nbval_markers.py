"""Marcas do nbval honestas: nenhuma comparação de saída que não compara nada.

O nbval 0.11 só compara a saída de uma célula se o notebook guarda essa célula como executada
(``execution_count`` diferente de ``None``). Os notebooks são versionados sem saídas: uma marca
``nbval-check-output`` numa célula sem saída guardada não confere nada — a afirmação da lição
precisa ser um ``assert`` (ou uma função de ``labutils`` que levanta erro).

E as marcas do nbval ficam nas *tags* da célula (metadados), não em comentários ``# NBVAL_...``
no código que o aluno lê.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import find_comment_markers

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
NBVAL_COMMENT = re.compile(r"^\s*#\s*(NBVAL_|PYTEST_VALIDATE_)\w*", re.M)
CHECK_TAG = "nbval-check-output"


def marker_comments(nb) -> list[str]:
    """Células com comentários de marca do nbval no código (``# NBVAL_...``)."""
    return [
        f"célula {i}: {m.group(0).strip()}"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for m in [NBVAL_COMMENT.search(cell.source)]
        if m
    ]


def checks_without_reference(nb) -> list[str]:
    """Células marcadas para comparar a saída (tag ou comentário) sem saída de referência."""
    bad = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        by_comment = ("check", True) in set(find_comment_markers(cell.source))
        by_tag = CHECK_TAG in cell.metadata.get("tags", [])
        if (by_comment or by_tag) and (cell.execution_count is None or not cell.outputs):
            bad.append(f"célula {i} (execution_count={cell.execution_count})")
    return bad


def _notebook(source: str, tags: list[str] | None = None, executed: bool = False):
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": tags} if tags else {})
    if executed:
        cell.execution_count = 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="True\n")]
    return nbformat.v4.new_notebook(cells=[cell])


# ---------------------------------------------------------------- o detector detecta


def test_detector_flags_a_check_output_cell_without_reference():
    assert checks_without_reference(_notebook("# NBVAL_CHECK_OUTPUT\nprint(True)"))
    assert checks_without_reference(_notebook("print(True)", tags=[CHECK_TAG]))
    assert not checks_without_reference(_notebook("print(True)", [CHECK_TAG], executed=True))
    assert not checks_without_reference(_notebook("print(True)", ["nbval-ignore-output"]))


def test_detector_flags_marker_comments_in_the_source():
    assert marker_comments(_notebook("# NBVAL_SKIP\nx = 1"))
    assert marker_comments(_notebook("x = 1\n#NBVAL_IGNORE_OUTPUT"))
    assert not marker_comments(_notebook("x = 1  # um comentário qualquer", ["nbval-skip"]))


# ---------------------------------------------------------------- os notebooks do curso


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_output_check_without_a_stored_reference(path):
    bad = checks_without_reference(nbformat.read(path, as_version=4))
    assert not bad, (
        f"{path.name}: células marcadas para comparar a saída, mas sem saída guardada — o nbval "
        f"0.11 não compara nada nelas: {bad}. Troque por um assert com mensagem em português."
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_markers_are_tags_not_comments(path):
    bad = marker_comments(nbformat.read(path, as_version=4))
    assert not bad, (
        f"{path.name}: marcas do nbval em comentários do código ({bad}); "
        "use as tags da célula (nbval-skip, nbval-ignore-output, raises-exception)."
    )
