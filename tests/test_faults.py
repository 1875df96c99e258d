"""Um worker do Ray morto (SIGKILL) no meio de uma tarefa da busca da lição 02, com o
``max_retries`` da lição: a tarefa roda de novo e a busca termina com o MSE de um treino direto.
No mesmo Ray local (uma partida só), o que as lições 01 e 03 afirmam do Ray: só a referência
passada direto a uma tarefa vira valor; o joblib no Ray entrega os jobs na vez dos atores."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import joblib
import nbformat
import numpy as np
import psutil
import pytest
import ray
from processes import descendants
from ray.util.joblib import register_ray

from labutils import lesson02, tuning
from tools.lesson_code import load

ROOT = Path(__file__).resolve().parents[1]
LESSON_02 = ROOT / "notebooks" / "02_busca_hiperparametros.ipynb"
GRID = [(20, 6), (20, 6), (20, 6), (20, 6)]
VICTIM = 1  # índice da configuração cujo worker é morto
HOLD_S = 60.0  # quanto a 1ª tentativa da vítima espera a morte (nunca para sempre)
REPORT_TIMEOUT_S = 120.0  # até a vítima relatar seu PID (Ray lento numa máquina carregada)
RESULT_TIMEOUT_S = 180.0


def lesson_max_retries() -> int:
    """O ``max_retries`` do ``@ray.remote`` da tarefa de treino da lição 02."""
    nb = nbformat.read(LESSON_02, as_version=4)
    found = [
        int(m.group(1))
        for cell in nb.cells
        if cell.cell_type == "code"
        for m in re.finditer(r"@ray\.remote\([^)]*max_retries\s*=\s*(\d+)", cell.source)
    ]
    assert found, f"{LESSON_02.name} não declara max_retries em nenhuma tarefa"
    return max(found)


@ray.remote
def train_and_report(n_estimators, max_depth, dados, index, report_dir, victim):
    """``fit_and_score`` de uma configuração, relatando o PID de cada tentativa."""
    attempts = Path(report_dir) / f"{index}.pids"
    with attempts.open("a") as out:
        out.write(f"{os.getpid()}\n")
    if index == victim and len(attempts.read_text().split()) == 1:
        deadline = time.monotonic() + HOLD_S
        while time.monotonic() < deadline:  # o teste mata este processo aqui
            time.sleep(0.1)
    return lesson02.fit_and_score(n_estimators, max_depth, *dados)


@pytest.fixture(scope="module")
def search_data(local_ray):
    """Os dados da busca, no Ray local dos testes (``tests/conftest.py``)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 8))
    y = X @ rng.normal(size=8) + rng.normal(scale=0.1, size=1500)
    return (X[:1200], y[:1200], X[1200:], y[1200:])


def _pids(report_dir: Path, index: int) -> list[int]:
    path = report_dir / f"{index}.pids"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _kill_the_victim(report_dir: Path) -> int:
    """Espera a vítima relatar o PID e a mata (SIGKILL) enquanto ela ainda está na tarefa."""
    deadline = time.monotonic() + REPORT_TIMEOUT_S
    while not _pids(report_dir, VICTIM):
        assert time.monotonic() < deadline, f"a tarefa {VICTIM} não começou"
        time.sleep(0.05)
    (pid,) = _pids(report_dir, VICTIM)
    assert pid in descendants(os.getpid()), f"o PID {pid} não é de um worker deste teste"
    assert psutil.Process(pid).cmdline()[0].startswith("ray::")
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.mark.slow
def test_killed_worker_task_runs_again_and_the_search_completes(search_data, tmp_path):
    retries = lesson_max_retries()
    assert retries >= 1, "a tarefa da lição 02 deveria ter max_retries >= 1"
    task, dados = train_and_report.options(max_retries=retries), ray.put(search_data)
    refs = [task.remote(n, d, dados, i, str(tmp_path), VICTIM) for i, (n, d) in enumerate(GRID)]
    killed = _kill_the_victim(tmp_path)
    results = ray.get(refs, timeout=RESULT_TIMEOUT_S)
    victim_pids = _pids(tmp_path, VICTIM)  # 2 tentativas: a 1ª no worker morto
    assert len(victim_pids) == 2 and victim_pids[0] == killed != victim_pids[1], victim_pids
    others = {i: _pids(tmp_path, i) for i in range(len(GRID)) if i != VICTIM}
    assert all(len(p) == 1 for p in others.values()), f"só a vítima deveria repetir: {others}"
    assert [(r[0], r[1]) for r in results] == GRID
    expected = lesson02.fit_and_score(*GRID[0], *search_data)[2]
    assert all(r[2] == pytest.approx(expected) for r in results)  # mesma semente, mesmo MSE


@pytest.mark.timeout(60)
def test_only_top_level_refs_arrive_as_values(local_ray):
    @ray.remote
    def kinds(direct, nested):
        return isinstance(direct, ray.ObjectRef), isinstance(nested["x"][0], ray.ObjectRef)

    ref = ray.put([1, 2, 3])
    assert ray.get(kinds.remote(ref, {"x": [ref]})) == (False, True)


@pytest.mark.timeout(120)
def test_joblib_on_ray_hands_each_job_to_the_next_actor_even_if_busy(local_ray):
    # o 1º job é longo: um worker livre pegaria o 3º; o Pool do Ray o dá ao ator do 1º, na vez
    wait = load("03_ray_tune_joblib").espera_cronometrada
    register_ray()
    with joblib.parallel_backend("ray"):
        bars = joblib.Parallel(n_jobs=2, batch_size=1)(
            joblib.delayed(wait)(s) for s in [0.5, 0.05, 0.05, 0.05, 0.05]
        )
    pids = [pid for pid, _, _ in bars]
    assert tuning.round_robin_difference(pids, 2) is None, pids
    assert bars[2][1] >= bars[0][2], "o 3º job esperou o 1º terminar no mesmo ator"
