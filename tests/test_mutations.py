"""A suíte pega um número errado: um helper quebrado de propósito deixa a lição vermelha.

O teste roda a lição 02 de verdade (num kernel, como o nbval), com uma primeira célula extra que
troca ``fit_forest_chunk`` por uma versão que treina UMA árvore a menos em cada bloco — o erro
que um mantenedor cometeria ao mexer na divisão em blocos. As asserções da própria lição têm de
acusar; se a lição passar com o helper quebrado, as asserções dela não conferem o que dizem.
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

DROP_A_TREE = """
import labutils.search
_original = labutils.search.fit_forest_chunk

def _fit_forest_chunk_sem_uma_arvore(n_trees, *args, **kwargs):
    return _original(max(1, n_trees - 1), *args, **kwargs)

labutils.search.fit_forest_chunk = _fit_forest_chunk_sem_uma_arvore
"""


def run_until_failure(notebook: Path, first_cell: str) -> CellExecutionError | None:
    """Executa ``notebook`` com ``first_cell`` antes de tudo; devolve o primeiro erro (ou None).

    No fim, no mesmo kernel, encerra o Ray que a lição tenha iniciado.
    """
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(first_cell))
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    failure = None
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as err:
                failure = err
                break
        nb.cells.append(nbformat.v4.new_code_cell("import ray\nray.shutdown()"))
        client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
    return failure


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_lesson_02_goes_red_when_a_forest_chunk_drops_a_tree():
    failure = run_until_failure(NOTEBOOKS / "02_busca_hiperparametros.ipynb", DROP_A_TREE)
    assert failure is not None, "a lição 02 passou com um bloco de floresta sem uma árvore"
    assert "a floresta montada dos blocos deveria prever" in str(failure) or (
        "os blocos deveriam dar o mesmo MSE" in str(failure)
    ), f"a lição falhou, mas não na asserção dos blocos:\n{failure}"
