"""Coleta dos notebooks pelo nbval.

- O notebook do aluno (``*_aluno.ipynb``) para de propósito no primeiro TODO: o nbval não o roda
  (``tests/test_exercise.py`` o confere).
- A lição 00 e a solução da 07 rodam inteiras num teste de ``tests/`` (:data:`RUN_BY_TESTS`):
  quando esse teste está na sessão, o nbval não as roda de novo.
- Cada célula ganha ``pytest.mark.timeout(NOTEBOOK_CELL_TIMEOUT_S)``, acima do
  ``--nbval-cell-timeout`` (que interrompe o kernel com a mensagem mais clara).
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
