"""Coleta dos notebooks pelo nbval.

- O notebook do aluno (``*_aluno.ipynb``) para de propósito no primeiro TODO: o nbval não o
  executa. Ele é testado em ``tests/test_exercise.py`` (gerado a partir da solução, e falha só
  com a mensagem amigável de "ainda não terminado").
- "Run All" duas vezes: com ``LABUTILS_NBVAL_RERUN=1`` (o ``make test`` liga), cada notebook é
  executado do início ao fim num kernel novo e, logo depois, **de novo no mesmo kernel** — como
  um aluno que roda tudo outra vez. Os itens da segunda passada se chamam ``Rerun N``.
  Exceto os de :data:`RUN_ONCE`, que sobem clusters locais, treinos multi-worker ou vários
  processos com TensorFlow: a segunda passada deles custaria ~5 min a mais nos 23–25 min de
  pytest medidos num clone novo em 2 núcleos. ``LABUTILS_NBVAL_RERUN=all`` roda também esses duas vezes.
- Limite de tempo: cada célula ganha ``pytest.mark.timeout(NOTEBOOK_CELL_TIMEOUT_S)`` (o padrão
  de 300 s do ``pyproject.toml`` vale para os testes comuns). Fica acima do
  ``--nbval-cell-timeout``, que interrompe o kernel antes e dá a mensagem mais clara; este é o
  limite de reserva se nem o kernel responder.
"""

import os

import pytest

#: notebooks executados uma vez só mesmo com ``LABUTILS_NBVAL_RERUN=1`` (veja o docstring)
RUN_ONCE = {
    "04_cluster_ray.ipynb",
    "06_inferencia_em_lote.ipynb",
    "07_exercicio_multiworker_solucao.ipynb",
}

#: limite (s) de cada célula de notebook no pytest-timeout; o nbval corta em 900 s
NOTEBOOK_CELL_TIMEOUT_S = 960


def _with_timeout(items) -> None:
    from nbval.plugin import IPyNbCell

    for item in items:
        if isinstance(item, IPyNbCell) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(NOTEBOOK_CELL_TIMEOUT_S))


def pytest_ignore_collect(collection_path, config):
    if collection_path.name.endswith("_aluno.ipynb"):
        return True
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    _rerun_twice(items)
    _with_timeout(items)


def _rerun_twice(items) -> None:
    mode = os.environ.get("LABUTILS_NBVAL_RERUN")
    if mode not in ("1", "all"):
        return
    once = set() if mode == "all" else RUN_ONCE
    from nbval.plugin import IPyNbCell

    result, current = [], []

    def flush():
        if current:
            parent = current[0].parent
            rerun = [
                IPyNbCell.from_parent(
                    parent,
                    name=f"Rerun {item.cell_num}",
                    cell_num=item.cell_num,
                    cell=item.cell,
                    options=item.options,
                )
                for item in current
            ]
            result.extend(current if parent.path.name in once else current + rerun)
            current.clear()

    for item in items:
        if isinstance(item, IPyNbCell):
            if current and item.parent is not current[0].parent:
                flush()
            current.append(item)
        else:
            flush()
            result.append(item)
    flush()
    items[:] = result
