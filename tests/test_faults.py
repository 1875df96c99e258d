"""Falhas na busca distribuída da lição 02: um worker do Ray morto no meio da busca.

A tarefa ``treino_random_forest`` e a ``busca_distribuida`` vêm do próprio notebook (a célula é
executada sem mudanças). Enquanto as tarefas rodam, matamos (SIGKILL) o processo de um worker
que está treinando: com ``max_retries`` o Ray refaz a tarefa e a busca devolve todos os
resultados; com ``max_retries=0`` a mesma morte chega ao notebook como erro.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import nbformat
import numpy as np
import psutil
import pytest
import ray

from labutils import config, raytools, search

ROOT = Path(__file__).resolve().parents[1]
LESSON_02 = ROOT / "notebooks" / "02_busca_hiperparametros.ipynb"
TASK = "treino_random_forest"
GRID = [(40, 8), (40, 8), (40, 8), (40, 8)]  # tarefas de ~1 s: dá tempo de matar uma no meio


@pytest.fixture(scope="module")
def lesson_ray(tmp_path_factory):
    os.environ[config.RESULTS_DIR_ENV] = str(tmp_path_factory.mktemp("results"))
    raytools.init_ray(num_cpus=2, dashboard=False)
    ns = {"__name__": "__main__"}
    exec("import ray\nfrom labutils import Timer\nfrom labutils.search import *", ns)  # noqa: S102
    nb = nbformat.read(LESSON_02, as_version=4)
    (cell,) = [
        c for c in nb.cells if f"def {TASK}(" in c.source and "def busca_distribuida" in c.source
    ]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 8))
    y = X @ rng.normal(size=8) + rng.normal(scale=0.1, size=3000)
    ns["dados"] = (X[:2400], y[:2400], X[2400:], y[2400:])
    exec(compile(cell.source, str(LESSON_02), "exec"), ns)  # noqa: S102 (a célula do notebook)
    yield ns
    ray.shutdown()
    os.environ.pop(config.RESULTS_DIR_ENV, None)


def _kill_a_running_task(killed: list[int], stop: threading.Event) -> None:
    """Mata (SIGKILL) o 1º worker nosso visto executando a tarefa ``TASK``."""
    while not stop.is_set():
        for proc in psutil.Process().children(recursive=True):
            try:
                title = " ".join(proc.cmdline())
            except psutil.Error:
                continue
            if title.startswith(f"ray::{TASK}"):
                time.sleep(0.2)  # já no meio do treino
                try:
                    os.kill(proc.pid, signal.SIGKILL)
                except ProcessLookupError:  # a tarefa acabou antes: tenta outra
                    continue
                killed.append(proc.pid)
                return
        time.sleep(0.05)


def _search_with_a_killed_worker(ns, task):
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_a_running_task, args=(killed, stop), daemon=True)
    killer.start()
    try:
        ns["treino_random_forest"] = task
        dados_ref = ray.put(ns["dados"])
        return ns["busca_distribuida"](GRID, dados_ref, nome="falha"), killed
    finally:
        stop.set()
        killer.join(5)


@pytest.mark.slow
def test_search_returns_every_result_when_a_worker_is_killed(lesson_ray):
    task = lesson_ray[TASK]
    assert task._default_options.get("max_retries", 0) >= 1, "a tarefa deveria ter max_retries"
    (results, _seconds), killed = _search_with_a_killed_worker(lesson_ray, task)
    assert killed, "nenhum worker executando a tarefa foi visto (nada foi morto)"
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == "zombie"
    assert [(r[0], r[1]) for r in results] == GRID
    X_train, y_train, X_test, y_test = lesson_ray["dados"]
    expected = search.fit_and_score(*GRID[0], X_train, y_train, X_test, y_test)[2]
    assert all(r[2] == pytest.approx(expected) for r in results)  # mesma semente, mesmo MSE
    csv = Path(os.environ[config.RESULTS_DIR_ENV]) / "02_falha.csv"
    assert len(csv.read_text().splitlines()) == 1 + len(GRID)


@pytest.mark.slow
def test_without_retries_the_same_kill_reaches_the_notebook(lesson_ray):
    """O teste acima pode falhar: sem ``max_retries`` a morte do worker vira erro."""
    no_retry = lesson_ray[TASK].options(max_retries=0)
    with pytest.raises(ray.exceptions.WorkerCrashedError):
        _search_with_a_killed_worker(lesson_ray, no_retry)
