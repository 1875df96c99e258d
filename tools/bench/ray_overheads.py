"""Custos fixos do Ray: agendar uma tarefa vazia e os dados de treino capturados pela função ×
``ray.put``. O ``ray.init`` e o ``ray.put`` × o array em cada chamada são medidos pela própria
lição 01 (o ensaio, ``make rehearsal``, registra o tempo de cada célula dela)."""

from __future__ import annotations

import statistics

import numpy as np

from labutils.config import pick
from labutils.timing import Timer
from tools.bench.report import Measurement, Report

SECTION = "Ray: custos fixos"
LESSON_01 = (
    "medidos pela própria lição 01, não aqui; o tempo de cada célula dela está no ensaio "
    "(docs/ensaio/ensaio.md, `make rehearsal`)"
)


def _add_pair(report: Report, what: str, base: tuple, other: tuple, note: str) -> None:
    """Duas formas de fazer o mesmo trabalho: a segunda com speedup sobre a primeira."""
    (base_label, base_values), (other_label, other_values) = base, other
    first = report.add(Measurement(SECTION, f"{what}: {base_label}", "tempo (s)", base_values))
    speedup = first.median / statistics.median(other_values)
    report.add(
        Measurement(
            SECTION, f"{what}: {other_label}", "tempo (s)", other_values, speedup, note=note
        )
    )


def _seconds(call) -> float:
    with Timer() as t:
        call()
    return t.seconds


def run(report: Report, repeats: int, scale: str) -> None:
    import ray

    from labutils.raytools import init_ray

    n_tasks = pick(full=2_000, smoke=200, scale=scale)
    captured_mb = pick(full=20, smoke=5, scale=scale)
    n_readers = pick(full=8, smoke=4, scale=scale)

    init_ray(dashboard=False)
    report.skip(SECTION, "ray.init; ray.put × o array em cada chamada", LESSON_01)

    @ray.remote
    def empty():
        return None

    ray.get([empty.remote() for _ in range(50)])  # aquece os workers
    rates = [n_tasks / _seconds(lambda: ray.get([empty.remote() for _ in range(n_tasks)]))
             for _ in range(repeats)]  # fmt: skip
    note = f"custo fixo ≈ {1000 / statistics.median(rates):.2f} ms por tarefa"
    report.add(Measurement(SECTION, f"{n_tasks} tarefas vazias", "tarefas/s", rates, note=note))

    @ray.remote
    def total(vector):
        return float(vector.sum())

    def readers(call) -> float:
        return _seconds(lambda: ray.get([call() for _ in range(n_readers)]))

    def put_once(block) -> float:  # o ray.put entra na conta
        with Timer() as t:
            ref = ray.put(block)
            ray.get([total.remote(ref) for _ in range(n_readers)])
        return t.seconds

    # Dados de treino lidos de fora da função, como no roteiro (a definição da função leva a
    # cópia), contra uma cópia só no armazém de objetos. Função nova a cada repetição: sessão nova.
    block = np.ones(captured_mb * 1024**2 // 8)
    by_capture, by_put_block = [], []
    for _ in range(repeats):

        @ray.remote
        def total_captured():
            return float(block.sum())

        by_capture.append(readers(total_captured.remote))
        by_put_block.append(put_once(block))
    _add_pair(report, f"{n_readers} tarefas lendo {captured_mb} MB de dados de treino",
              ("capturados pela função (roteiro)", by_capture), ("ray.put uma vez", by_put_block),
              note="speedup sobre capturar os dados na definição da função")  # fmt: skip
    ray.shutdown()
