"""Lição 02: a busca de hiperparâmetros da Random Forest, em Python puro (sem Ray, a não ser
:func:`gather_with_progress`): o notebook embrulha estas funções em ``@ray.remote``, e elas são
testadas sem cluster e reaproveitadas nas lições 03 e 04 e no ``make bench``.
"""

from __future__ import annotations

import csv
import io
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from labutils.config import pick, results_dir

#: a semente de toda floresta das lições 02 e 03 (e da divisão dos dados)
RANDOM_STATE = 42


# ---------------------------------------------------------------- a grade
def validate_grid(grid: Iterable[Any]) -> list[tuple[int, int]]:
    """Confere a grade ``[(n_estimators, max_depth), ...]`` (não vazia, pares de inteiros
    positivos) e a devolve como lista de tuplas; senão ``ValueError`` em português. Chame antes
    de enviar qualquer tarefa."""
    if grid is None or isinstance(grid, str | bytes):
        raise ValueError(
            f"A grade de hiperparâmetros deve ser uma lista de pares (n_estimators, max_depth), "
            f"recebi {grid!r}."
        )
    items = list(grid)
    if not items:
        raise ValueError(
            "A grade de hiperparâmetros está vazia: informe ao menos um par "
            "(n_estimators, max_depth), por exemplo [(100, 10)]."
        )
    checked: list[tuple[int, int]] = []
    for pos, item in enumerate(items):
        if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) != 2:
            raise ValueError(
                f"Item {pos} da grade ({item!r}) não é um par (n_estimators, max_depth): "
                "use tuplas de dois inteiros, como (100, 10)."
            )
        for name, value in zip(("n_estimators", "max_depth"), item, strict=True):
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(
                    f"Item {pos} da grade {tuple(item)!r}: {name} deve ser um número inteiro, "
                    f"recebi {value!r} ({type(value).__name__})."
                )
            if value <= 0:
                raise ValueError(
                    f"Item {pos} da grade {tuple(item)!r}: {name} deve ser positivo (≥ 1), "
                    f"recebi {value}."
                )
        checked.append((int(item[0]), int(item[1])))
    return checked


# A cópia da célula ``# @save`` da seção 9a da lição 02 (``tools/lesson_code.COPIES``).
def estimated_cost(n_estimators, max_depth, n_samples=None):
    """Custo relativo de uma floresta, só para ordenar: árvores × níveis úteis (depois de
    ~log2(amostras) níveis as folhas ficam puras e os níveis seguintes quase não custam)."""
    ((n_estimators, max_depth),) = validate_grid([(n_estimators, max_depth)])
    levels = float(max_depth)
    if n_samples is not None and n_samples > 1:
        levels = min(levels, math.log2(n_samples))
    return n_estimators * levels


def most_expensive_first(grid, n_samples=None):
    """A grade das configurações mais caras para as mais baratas (estimated_cost): a mais longa
    não começa por último, com os outros núcleos parados (a regra LPT)."""
    checked = validate_grid(grid)
    return sorted(checked, key=lambda nd: estimated_cost(*nd, n_samples), reverse=True)


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
    """Separa ``test_size`` para o teste e, do resto, ``validation_size`` para a validação.

    A busca escolhe pela **validação**; o teste é usado uma vez, no fim (escolher no teste o
    deixaria otimista). A divisão é sempre a mesma: as lições 02 e 03 e o benchmark a dividem.
    """
    from sklearn.model_selection import train_test_split

    for name, frac in (("test_size", test_size), ("validation_size", validation_size)):
        if not 0 < frac < 1:
            raise ValueError(f"{name} deve ser uma fração entre 0 e 1, recebi {frac!r}.")
    X_rest, X_test, y_rest, y_test = train_test_split(
        X, y, test_size=test_size, random_state=random_state
    )
    X_train, X_val, y_train, y_val = train_test_split(
        X_rest, y_rest, test_size=validation_size, random_state=random_state
    )
    return Split(X_train, y_train, X_val, y_val, X_test, y_test)


@dataclass(frozen=True)
class TransferSizes:
    """O experimento "dados uma vez só": cópias empilhadas de X_train e tarefas que as leem."""

    repeat: int
    tasks: int


def transfer_sizes(scale: str | None = None) -> TransferSizes:
    """~20 MB de dados e 16 tarefas na escala ``full``; bem menos na ``smoke``."""
    return TransferSizes(
        repeat=pick(full=20, smoke=10, scale=scale), tasks=pick(full=16, smoke=6, scale=scale)
    )


# ---------------------------------------------------------------- o treino
# A cópia da célula ``# @save`` da lição 02, que o aluno lê (``tools/lesson_code.COPIES``).
def fit_and_score(
    n_estimators,
    max_depth,
    X_train,
    y_train,
    X_test,
    y_test,
    random_state=RANDOM_STATE,
    *,
    n_jobs=None,
):
    """Treina uma ``RandomForestRegressor`` e devolve ``(n_estimators, max_depth, mse, segundos)``.

    O MSE é medido em ``(X_test, y_test)``: numa busca, passe a **validação**. ``segundos``
    inclui treino e avaliação, como no roteiro original; ``n_jobs`` vai ao scikit-learn.
    """
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.metrics import mean_squared_error

    start = time.perf_counter()
    model = RandomForestRegressor(
        n_estimators=n_estimators, max_depth=max_depth, random_state=random_state, n_jobs=n_jobs
    )
    model.fit(X_train, y_train)
    mse = float(mean_squared_error(y_test, model.predict(X_test)))
    return (n_estimators, max_depth, mse, time.perf_counter() - start)


# ---------------------------------------------------------------- o limite do speedup
# A cópia da célula ``# @save`` da seção 8 da lição 02 (``tools/lesson_code.COPIES``).
def _check_tasks(task_seconds, cores):
    times = np.asarray(list(task_seconds), dtype=float)
    if times.size == 0:
        raise ValueError("É preciso ao menos um tempo de tarefa para calcular o limite.")
    if np.any(times < 0) or not np.all(np.isfinite(times)):
        raise ValueError(f"Os tempos das tarefas devem ser finitos e ≥ 0, recebi {times.tolist()}.")
    if cores <= 0:
        raise ValueError(f"O número de núcleos deve ser positivo, recebi {cores!r}.")
    return times


def makespan_lower_bound(task_seconds, cores):
    """O menor tempo total possível: max(tarefa mais longa, trabalho total / núcleos)."""
    times = _check_tasks(task_seconds, cores)
    return float(max(times.max(), times.sum() / cores))


def speedup_bound(task_seconds, cores):
    """O maior speedup possível sobre a série: trabalho total / makespan_lower_bound."""
    times = _check_tasks(task_seconds, cores)
    total = float(times.sum())
    return total / makespan_lower_bound(times, cores) if total else 1.0


# ---------------------------------------------------------------- resultados gravados linha a linha
#: colunas dos resultados de uma busca (uma linha por configuração)
RESULT_COLUMNS = ("n_estimators", "max_depth", "mse", "segundos")


def results_path(name: str) -> Path:
    """Caminho do CSV ``<pasta de resultados>/<name>.csv``."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(
            "O nome do resultado deve ser um nome de arquivo simples (ex.: '02_busca'), "
            f"recebi {name!r}."
        )
    return results_dir() / f"{name}.csv"


def _csv_line(row: Sequence[Any]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    return buf.getvalue().encode("utf-8")


def start_csv(
    path: Path | str, columns: Sequence[str] = RESULT_COLUMNS, rows: Iterable[Sequence[Any]] = ()
) -> Path:
    """(Re)cria o CSV com o cabeçalho e ``rows``, atomicamente: montado ao lado e trocado de uma
    vez (``os.replace``), quem lê nunca vê um CSV pela metade."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(_csv_line(columns) + b"".join(_csv_line(r) for r in rows))
    os.replace(tmp, path)
    return path


def save_results(
    results: Iterable[Sequence[Any]], name: str, columns: Sequence[str] = RESULT_COLUMNS
) -> Path:
    """Grava os resultados (uma tupla por linha) em ``results/<name>.csv`` e devolve o caminho."""
    return start_csv(results_path(name), columns, results)


def append_row(path: Path | str, row: Sequence[Any]) -> None:
    """Acrescenta UMA linha ao CSV numa única escrita ``O_APPEND`` e força a gravação em disco:
    se o processo morrer, no pior caso fica uma linha cortada sem ``\\n``, que
    :func:`read_results` descarta; nada do que já estava lá se perde."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, _csv_line(row))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_results(path: Path | str) -> list[tuple[int, int, float, float]]:
    """``[(n_estimators, max_depth, mse, segundos), ...]`` de um CSV (ausente: nenhum), sem uma
    última linha cortada (sem ``\\n``)."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")[1:-1]  # sem o cabeçalho e o resto
    return [
        (int(n), int(d), float(mse), float(sec))
        for n, d, mse, sec in (f for f in csv.reader(lines) if len(f) == len(RESULT_COLUMNS))
    ]


def gather_with_progress(
    refs: Sequence[Any],
    *,
    desc: str = "tarefas",
    csv_path: Path | str | None = None,
    columns: Sequence[str] = RESULT_COLUMNS,
    timeout_s: float | None = None,
    append: bool = False,
) -> list[Any]:
    """Espera as tarefas com ``ray.wait`` e uma barra ``tqdm``; devolve na ordem de envio.

    Com ``csv_path``, cada resultado vai para o CSV assim que chega (:func:`append_row`); o
    arquivo é recriado no início, a menos que ``append=True`` (retomada). Com ``timeout_s``,
    ``TimeoutError`` se nenhuma tarefa terminar nesse intervalo.
    """
    import ray
    from tqdm import tqdm

    refs = list(refs)
    position = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    pending = list(refs)
    if csv_path is not None and (
        not append or not Path(csv_path).exists() or Path(csv_path).stat().st_size == 0
    ):
        start_csv(csv_path, columns)
    with tqdm(total=len(refs), desc=desc, unit="tarefa") as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=timeout_s)
            if not done:
                raise TimeoutError(
                    f"Nenhuma tarefa terminou em {timeout_s} s ({len(pending)} pendentes). "
                    "Confira se o cluster tem CPUs livres (ray.cluster_resources()); "
                    f"os resultados já recebidos estão em {csv_path or 'memória'}."
                )
            for ref in done:
                value = ray.get(ref)
                results[position[ref]] = value
                if csv_path is not None:
                    append_row(csv_path, value)
                bar.update(1)
    return results


def resumable_search(
    grid: Iterable[Any],
    submit: Any,
    csv_path: Path | str,
    *,
    desc: str = "busca",
    timeout_s: float | None = None,
) -> list[tuple[int, int, float, float]]:
    """Uma busca que retoma de onde parou: nada do que terminou é perdido nem refeito.

    ``submit(n_estimators, max_depth)`` envia uma configuração e devolve a referência Ray de
    ``(n, profundidade, mse, segundos)``. As que já estão em ``csv_path`` não são enviadas de
    novo; as outras vão para o CSV assim que terminam. Devolve na ordem da grade.
    """
    checked = validate_grid(grid)
    if len(set(checked)) != len(checked):
        raise ValueError(
            "A grade tem configurações repetidas: na busca retomável cada par "
            "(n_estimators, max_depth) identifica uma linha do CSV e deve aparecer uma vez só."
        )
    path = Path(csv_path)
    done = {(n, d): (n, d, mse, s) for n, d, mse, s in read_results(path)}
    if path.exists():  # descarta uma linha cortada no fim (o processo morreu escrevendo)
        os.truncate(path, path.read_bytes().rfind(b"\n") + 1)
    refs = [submit(n, d) for n, d in checked if (n, d) not in done]
    for value in gather_with_progress(
        refs, desc=desc, csv_path=path, timeout_s=timeout_s, append=True
    ):
        done[(value[0], value[1])] = tuple(value)
    return [done[cfg] for cfg in checked]
