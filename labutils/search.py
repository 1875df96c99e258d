"""Lição 02, o que não é o assunto dela: a divisão treino/validação/teste, os CSVs dos resultados,
a espera das tarefas com uma barra de progresso e o limite que a máquina alcança de fato
(:func:`measured_bound`, o mesmo do ``tools/bench``).
"""

from __future__ import annotations

import csv
import math
import multiprocessing
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from labutils.config import results_dir
from labutils.system import usable_cpus

#: a semente de toda floresta das lições 02 e 03 (e da divisão dos dados)
RANDOM_STATE = 42


# ---------------------------------------------------------------- os dados
class Split(NamedTuple):
    """Treino, validação e teste. ``fit_eval`` é a tupla que a busca recebe (sem o teste)."""

    X_train: Any
    y_train: Any
    X_val: Any
    y_val: Any
    X_test: Any
    y_test: Any

    @property
    def fit_eval(self) -> tuple[Any, Any, Any, Any]:
        return (self.X_train, self.y_train, self.X_val, self.y_val)


def split_train_validation_test(
    X: Any,
    y: Any,
    *,
    test_size: float = 0.2,
    validation_size: float = 0.2,
    random_state: int = RANDOM_STATE,
) -> Split:
    """Teste e, do resto, validação (a busca escolhe por ela); sempre a mesma divisão."""
    from sklearn.model_selection import train_test_split

    X_rest, X_test, y_rest, y_test = train_test_split(
        X, y, test_size=test_size, random_state=random_state
    )
    X_train, X_val, y_train, y_val = train_test_split(
        X_rest, y_rest, test_size=validation_size, random_state=random_state
    )
    return Split(X_train, y_train, X_val, y_val, X_test, y_test)


# ---------------------------------------------------------------- resultados


def results_path(name: str) -> Path:
    """Caminho do CSV ``<pasta de resultados>/<name>.csv``."""
    return results_dir() / f"{name}.csv"


def save_results(results: Iterable[Sequence[Any]], name: str) -> Path:
    """Grava ``(n_estimators, max_depth, mse, segundos)`` de uma busca em ``results/<name>.csv``."""
    path = results_path(name)
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("n_estimators", "max_depth", "mse", "segundos"), *results])
    return path


def gather_with_progress(
    refs: Sequence[Any], *, desc: str = "tarefas", timeout_s: float | None = None
) -> list[Any]:
    """Espera as tarefas com ``ray.wait`` e uma barra ``tqdm``; devolve na ordem de envio. Com
    ``timeout_s``, ``TimeoutError`` se nenhuma tarefa terminar nesse intervalo."""
    import ray
    from tqdm import tqdm

    refs = list(refs)
    results: dict[Any, Any] = {}
    pending = list(refs)
    with tqdm(total=len(refs), desc=desc, unit="tarefa") as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=timeout_s)
            if not done:
                raise TimeoutError(
                    f"Nenhuma tarefa terminou em {timeout_s} s ({len(pending)} pendentes). "
                    "Confira se o cluster tem CPUs livres (ray.cluster_resources())."
                )
            for ref in done:
                results[ref] = ray.get(ref)  # já aqui: o erro de uma tarefa aparece na hora
                bar.update(1)
    return [results[ref] for ref in refs]


# ---------------------------------------------------------------- o limite medido
def _side_copy(target, args, warm, barrier, results) -> None:
    if warm:  # importa e aquece antes da largada (fora da medida)
        warm[0](*warm[1])
    barrier.wait()
    results.put(target(*args))


def side_by_side(
    target: Callable[..., Any],
    args: Sequence[Any],
    copies: int,
    timeout: float,
    warm: tuple[Callable[..., Any], Sequence[Any]] | None = None,
) -> tuple[float, list[Any]]:
    """``copies`` processos comuns (sem Ray: o custo do Ray é o que se quer medir contra), cada
    um roda ``target(*args)``, largando juntos depois de uma barreira (``warm`` roda antes dela);
    ``(segundos até a última cópia terminar, o resultado de cada cópia)``. ``target`` e ``warm``
    precisam ser importáveis (funções de um módulo, não de um notebook)."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(copies + 1), ctx.Queue()
    procs = [ctx.Process(target=_side_copy, args=(target, args, warm, barrier, results),
                         daemon=True) for _ in range(copies)]  # fmt: skip
    for proc in procs:
        proc.start()
    try:  # uma cópia que falha ou trava: BrokenBarrierError ou queue.Empty depois do prazo
        barrier.wait(timeout=timeout)
        start = time.perf_counter()
        got = [results.get(timeout=timeout) for _ in procs]
        seconds = time.perf_counter() - start
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    return seconds, got


def sum_of_squares(n: int) -> int:
    """O laço de Python puro da lição 01, num módulo: :func:`measured_bound` o roda em processos
    novos, que não enxergam as funções do notebook."""
    total = 0
    for i in range(n):
        total += i * i
    return total


def _repeat(target: Callable[..., Any], args: Sequence[Any], times: int) -> None:
    for _ in range(times):
        target(*args)


def measured_bound(
    target: Callable[..., Any],
    args: Sequence[Any],
    copies: int,
    timeout: float = 120,
    warm: tuple[Callable[..., Any], Sequence[Any]] | None = None,
    min_seconds: float = 1.0,
) -> float:
    """O speedup que esta máquina alcança com ``copies`` trabalhos iguais ao mesmo tempo:
    k × (uma cópia sozinha) / (k cópias lado a lado). Com SMT, ou com mais CPUs declaradas ao
    Ray (``LABUTILS_CPUS``) que núcleos, fica abaixo de ``copies``. Mais cópias que as CPUs
    lógicas desta máquina não rendem mais: k = o menor dos dois (e a medida fica curta). Cada
    cópia repete ``target`` até levar ``min_seconds`` sozinha: um treino de 0,1 s medido uma vez
    é só ruído."""
    copies = max(1, min(copies, usable_cpus()))
    if copies == 1:  # uma cópia é a própria referência: medir só daria ruído
        return 1.0
    once, _ = side_by_side(target, args, 1, timeout, warm)
    work = (target, args, max(1, math.ceil(min_seconds / max(once, 1e-3))))
    alone, _ = side_by_side(_repeat, work, 1, timeout, warm)
    together, _ = side_by_side(_repeat, work, copies, timeout, warm)
    return copies * alone / together
