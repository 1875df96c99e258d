"""``make matrix``: a leitura da linha de cada lição e a tabela, sem rodar lição nenhuma."""

import pytest

from tools import matrix


@pytest.mark.timeout(30)
def test_each_line_becomes_a_pass_a_registered_refusal_or_the_error():
    assert matrix.verdict("01_x.ipynb   ok em  21.0 s", None) == "✅ 21.0 s"
    refused = "07_x.ipynb  FALHOU (\x1b[31mRuntimeError\x1b[39m: Pedido: 2 workers …) em 15.0 s"
    cell = matrix.verdict(refused, "Pedido: 2 workers")
    assert (
        cell.startswith("✅ recusa clara: «RuntimeError: Pedido: 2 workers") and "\x1b" not in cell
    )
    assert cell.endswith("15.0 s")
    other = matrix.verdict(refused, "O pool pede")  # outra recusa que não a registrada: falha
    assert other.startswith("❌ RuntimeError: Pedido")
    assert matrix.verdict("", None) == "❌ sem resultado"


@pytest.mark.timeout(30)
def test_the_table_has_a_row_per_lesson_and_a_column_per_shape():
    shapes = matrix.SHAPES[:2]
    table = {shapes[0].name: {"00_a.ipynb": "✅ 1 s", "01_b.ipynb": "❌ x"}, shapes[1].name: {}}
    lines = matrix.markdown(table, shapes, "hoje").splitlines()
    rows = [x for x in lines if x.startswith("| 0")]
    assert rows == ["| 00_a.ipynb | ✅ 1 s | — |", "| 01_b.ipynb | ❌ x | — |"]
    assert all(x.count("|") == len(shapes) + 2 for x in lines if x.startswith("|"))
