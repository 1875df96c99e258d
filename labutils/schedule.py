"""A fila de tarefas: o que o hardware permite e o que uma ordem de envio consegue.

:func:`speedup_bound` (o maior speedup possível com ``cores`` núcleos),
:func:`list_schedule_makespan` (simula a fila do Ray numa ordem dada) e :func:`list_schedule` (a
mesma fila, tarefa a tarefa, para a linha do tempo da lição 02). Usado pela lição 02
(reexportado por :mod:`labutils.search`), por :func:`labutils.chunks.plan_chunks` e pelo
``make bench``. Python puro, sem Ray.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

import numpy as np


def _check_tasks(task_seconds: Iterable[float], cores: float) -> np.ndarray:
    times = np.asarray(list(task_seconds), dtype=float)
    if times.size == 0:
        raise ValueError("É preciso ao menos um tempo de tarefa para calcular o limite.")
    if np.any(times < 0) or not np.all(np.isfinite(times)):
        raise ValueError(f"Os tempos das tarefas devem ser finitos e ≥ 0, recebi {times.tolist()}.")
    if cores <= 0:
        raise ValueError(f"O número de núcleos deve ser positivo, recebi {cores!r}.")
    return times


def makespan_lower_bound(task_seconds: Iterable[float], cores: float) -> float:
    """O menor tempo total possível: ``max(tarefa mais longa, trabalho total / núcleos)``."""
    times = _check_tasks(task_seconds, cores)
    return float(max(times.max(), times.sum() / cores))


def speedup_bound(task_seconds: Iterable[float], cores: float) -> float:
    """O maior speedup possível sobre a execução em série, com ``cores`` núcleos.

    Nenhuma ordem de execução termina antes da tarefa mais longa nem antes de ``trabalho / núcleos``;
    logo o speedup nunca passa de ``trabalho / max(mais longa, trabalho / núcleos)``.
    """
    times = _check_tasks(task_seconds, cores)
    total = float(times.sum())
    if total == 0:
        return 1.0
    return total / makespan_lower_bound(times, cores)


def list_schedule_makespan(task_seconds: Iterable[float], cores: int) -> float:
    """Tempo total se as tarefas forem entregues NESTA ORDEM ao primeiro núcleo livre.

    É o que o Ray faz com tarefas independentes de 1 CPU cada: simula a fila sem custo extra.
    """
    times = _check_tasks(task_seconds, cores)
    free_at = [0.0] * max(1, int(cores))
    for t in times:
        start = heapq.heappop(free_at)
        heapq.heappush(free_at, start + float(t))
    return max(free_at)


def list_schedule(task_seconds: Iterable[float], cores: int) -> list[tuple[int, float, float]]:
    """A fila de :func:`list_schedule_makespan`, tarefa a tarefa: ``(núcleo, início, fim)`` de cada
    tarefa, na ordem dada. Cada tarefa vai para o núcleo que fica livre primeiro (no empate, o de
    menor número)."""
    times = _check_tasks(task_seconds, cores)
    free_at = [(0.0, core) for core in range(max(1, int(cores)))]
    out = []
    for t in times:
        start, core = heapq.heappop(free_at)
        out.append((core, start, start + float(t)))
        heapq.heappush(free_at, (start + float(t), core))
    return out
