"""Coleta dos notebooks pelo nbval.

- O notebook do aluno (``*_aluno.ipynb``) para de propósito no primeiro TODO: o nbval não o
  executa. Ele é testado em ``tests/test_exercise.py`` (gerado a partir da solução, e falha só
  com a mensagem amigável de "ainda não terminado").
- **O caminho principal, sem as partes opcionais.** Com ``LABUTILS_NBVAL_CORE=1`` (o
  ``make test`` liga), cada notebook em que uma célula principal vem depois de uma com a tag
  :data:`OPTIONAL_TAG` roda uma segunda vez, num kernel novo, **sem** as opcionais: como a turma
  que pula as seções opcionais. Os itens se chamam ``NOME.ipynb[sem opcionais]::Cell N``. Uma
  célula principal que dependa de algo definido numa opcional falha aqui. Os resultados desta
  passada vão para uma pasta à parte (:class:`CoreOnlyNotebook`). (Essa passada substitui a de
  rodar o mesmo notebook duas vezes no mesmo kernel.) Quando as opcionais ficam no fim e depois
  delas só há o encerramento (``ray.shutdown()``, ``cluster.stop()``: :func:`needs_core_run`), o
  caminho principal é o começo da execução inteira, e a segunda passada não conferiria nada a
  mais: ela não roda.
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

import ast
import os

import nbformat
import pytest
from nbval.plugin import IPyNbFile

#: a tag das células de uma seção opcional (o título dela também diz "(opcional)")
OPTIONAL_TAG = "opcional"

#: limite (s) de cada célula de notebook no pytest-timeout; o nbval corta em 900 s
NOTEBOOK_CELL_TIMEOUT_S = 960


def _optional(cell) -> bool:
    return OPTIONAL_TAG in cell.get("metadata", {}).get("tags", [])


def core_cells(nb) -> list:
    """As células do notebook sem as da tag :data:`OPTIONAL_TAG`."""
    return [c for c in nb.cells if not _optional(c)]


def _only_releases(source: str) -> bool:
    """Se a célula só encerra: ``ray.shutdown()`` e ``x.stop()``, sem argumentos, direto ou sob um
    ``if`` sem ``else`` (``if cluster_local is not None: cluster_local.stop()``)."""

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


def needs_core_run(nb) -> bool:
    """Se a passada sem opcionais confere algo que a execução inteira não confere: alguma célula de
    código principal, que não só encerra (:func:`_only_releases`), vem depois de uma opcional."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    optional = [_optional(c) for c in code]
    if True not in optional:
        return False
    first = optional.index(True)
    return any(
        not opt and not _only_releases(c.source)
        for c, opt in zip(code[first:], optional[first:], strict=True)
    )


class CoreOnlyNotebook(IPyNbFile):
    """O mesmo notebook, num kernel novo, sem as células opcionais, gravando os resultados em
    ``<resultados>/sem_opcionais/<notebook>``: com o pytest-xdist, esta passada pode rodar ao
    mesmo tempo que a inteira, e as duas escreveriam nos mesmos arquivos (visto: as previsões do
    Ray Data da lição 06 saíram em dobro)."""

    def collect(self):
        items = list(super().collect())  # lê self.nb e cria um item por célula de código
        kept = {id(c) for c in core_cells(self.nb)}
        yield from (item for item in items if id(item.cell) in kept)

    def setup(self):
        from labutils.config import RESULTS_DIR_ENV, results_dir

        before = os.environ.get(RESULTS_DIR_ENV)
        # o kernel (--nbval-current-env) herda o ambiente deste processo ao iniciar
        os.environ[RESULTS_DIR_ENV] = str(results_dir() / "sem_opcionais" / self.path.stem)
        try:
            super().setup()
        finally:
            if before is None:
                os.environ.pop(RESULTS_DIR_ENV, None)
            else:
                os.environ[RESULTS_DIR_ENV] = before


def pytest_ignore_collect(collection_path, config):
    if collection_path.name.endswith("_aluno.ipynb"):
        return True
    return None


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if not (opt.nbval or opt.nbval_lax) or file_path.suffix != ".ipynb":
        return None
    if os.environ.get("LABUTILS_NBVAL_CORE") != "1" or file_path.name.endswith("_aluno.ipynb"):
        return None
    if not needs_core_run(nbformat.read(str(file_path), as_version=4)):
        return None
    name = f"{file_path.name}[sem opcionais]"
    try:
        nodeid = f"{file_path.relative_to(parent.config.rootpath).as_posix()}[sem opcionais]"
    except ValueError:  # fora da raiz do pytest
        nodeid = name
    return CoreOnlyNotebook.from_parent(parent, path=file_path, name=name, nodeid=nodeid)


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
