"""A suíte pega um número errado: o código da lição quebrado de propósito a deixa vermelha.

O teste roda a lição 02 de verdade (num kernel, como o nbval) com a célula de ``fit_forest_chunk``
editada para treinar UMA árvore a menos em cada bloco — o erro que um aluno ou um mantenedor
cometeria ao mexer na divisão em blocos. As asserções da própria lição têm de acusar; se a lição
passar com o código quebrado, as asserções dela não conferem o que dizem.
"""

from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from tools.run_notebooks import execute

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: a linha da lição 02 que treina o bloco, e ela com uma árvore a menos
BLOCK_FIT = "model = RandomForestRegressor(n_estimators=n_trees,"
DROP_A_TREE = "model = RandomForestRegressor(n_estimators=max(1, n_trees - 1),"


def run_until_failure(notebook: Path, line: str, mutant: str) -> CellExecutionError | None:
    """Executa ``notebook`` com ``line`` trocada por ``mutant`` (numa célula só); devolve o
    primeiro erro (ou None). O executor encerra o kernel e o Ray que a lição iniciou."""
    nb = nbformat.read(notebook, as_version=4)
    hits = [c for c in nb.cells if c.cell_type == "code" and line in c.source]
    assert len(hits) == 1, f"{line!r} deveria estar em uma célula de {notebook.name}"
    hits[0].source = hits[0].source.replace(line, mutant)
    try:
        execute(nb, cwd=NOTEBOOKS, timeout=600)
    except CellExecutionError as err:
        return err
    return None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_lesson_02_goes_red_when_a_forest_chunk_drops_a_tree():
    failure = run_until_failure(
        NOTEBOOKS / "02_busca_hiperparametros.ipynb", BLOCK_FIT, DROP_A_TREE
    )
    assert failure is not None, "a lição 02 passou com um bloco de floresta sem uma árvore"
    assert "a floresta montada dos blocos deveria prever" in str(failure) or (
        "os blocos deveriam dar o mesmo MSE" in str(failure)
    ), f"a lição falhou, mas não na asserção dos blocos:\n{failure}"
