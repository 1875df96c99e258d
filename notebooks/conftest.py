"""Coleta dos notebooks pelo nbval.

- O notebook do aluno (``*_aluno.ipynb``) para de propósito no primeiro TODO: o nbval não o
  executa. Ele é testado em ``tests/test_exercise.py`` (gerado a partir da solução, e falha só
  com a mensagem amigável de "ainda não terminado").
- As seções opcionais ficam no fim de cada notebook (``tests/test_optional_sections.py``): o
  caminho principal é o começo da execução inteira, e uma passada só o confere.
- **Uma execução só.** A lição 00 roda inteira no JupyterLab, no teste de navegador, e a solução
  da lição 07 roda inteira (exemplos e opcionais incluídos) no teste da correção
  (``tools/grade.py --all-cells``), numa cópia com um erro conhecido no TODO 2; os dois conferem
  que nenhuma célula deu erro (na cópia, só a verificação do TODO 2). Quando esse teste está na
  mesma sessão (e, para a 00, o Chromium existe), o nbval não roda o notebook de novo
  (:data:`RUN_BY_TESTS`); rodando só ``notebooks/``, o nbval os executa.
- Limite de tempo: cada célula ganha ``pytest.mark.timeout(NOTEBOOK_CELL_TIMEOUT_S)`` (o padrão
  de 300 s do ``pyproject.toml`` vale para os testes comuns). Fica acima do
  ``--nbval-cell-timeout``, que interrompe o kernel antes e dá a mensagem mais clara; este é o
  limite de reserva se nem o kernel responder.
"""

from __future__ import annotations

import os

import pytest

#: limite (s) de cada célula de notebook no pytest-timeout; o nbval corta em 900 s
NOTEBOOK_CELL_TIMEOUT_S = 960


def pytest_ignore_collect(collection_path, config):
    if collection_path.name.endswith("_aluno.ipynb"):
        return True
    return None


#: notebooks que um teste de ``tests/`` já executa inteiros, toda célula sem erro: o nbval não os
#: roda de novo quando esse teste está na mesma sessão (e pode rodar: o Chromium, para a 00)
RUN_BY_TESTS = {
    "00_diagnostico_ambiente.ipynb": (
        "test_browser.py::test_jupyterlab_lists_lessons_in_order_and_runs_lesson_00",
        "/usr/bin/chromium",
    ),
    "07_exercicio_multiworker_solucao.ipynb": (
        "test_grade.py::test_a_copy_with_one_known_mistake_fails_exactly_that_check_and_runs_whole",
        None,
    ),
}


def _run_by_tests(items) -> dict[str, str]:
    """``{notebook: teste}`` dos notebooks de :data:`RUN_BY_TESTS` que rodam nesta sessão."""
    ids = [item.nodeid for item in items]
    return {
        name: test
        for name, (test, needs) in RUN_BY_TESTS.items()
        if (needs is None or os.path.exists(needs)) and any(i.endswith(test) for i in ids)
    }


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    from nbval.plugin import IPyNbCell

    elsewhere = _run_by_tests(items)
    for item in items:
        if not isinstance(item, IPyNbCell):
            continue
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(NOTEBOOK_CELL_TIMEOUT_S))
        if item.path.name in elsewhere:
            reason = f"roda inteiro, uma vez só, em tests/{elsewhere[item.path.name]}"
            item.add_marker(pytest.mark.skip(reason=reason))
