"""Busca de hiperparâmetros da lição 02: treino, limites de speedup, blocos de árvores e resultados.

As funções daqui são Python puro (sem Ray): o notebook as embrulha em ``@ray.remote`` para
mostrar o conceito. Assim elas podem ser testadas sem cluster e reaproveitadas na lição 04.

- :func:`validate_grid`: rejeita grades inválidas antes de qualquer tarefa começar;
- :func:`fit_and_score`: treina uma Random Forest e devolve ``(n, profundidade, mse, segundos)``;
- :func:`speedup_bound` e :func:`list_schedule_makespan`: o que o hardware permite e o que uma
  ordem de envio consegue;
- :func:`most_expensive_first`: ordena a grade pelas configurações mais caras primeiro;
- :func:`plan_chunks`, :func:`fit_forest_chunk`, :func:`merge_forests`, :func:`combine_chunks`:
  uma floresta grande dividida em blocos de árvores, idênticos às árvores da floresta inteira;
- :func:`gather_with_progress` e :func:`save_results`: barra de progresso com ``ray.wait`` e CSV
  gravado a cada resultado, para que uma busca longa nunca se perca.
"""

from __future__ import annotations

import copy
import csv
import heapq
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from labutils.config import pick, results_dir

#: maior semente que o scikit-learn sorteia para cada árvore (``sklearn.ensemble._forest.MAX_INT``)
MAX_INT = np.iinfo(np.int32).max
#: colunas dos resultados de uma busca (uma linha por configuração)
RESULT_COLUMNS = ("n_estimators", "max_depth", "mse", "segundos")


@dataclass(frozen=True)
class TransferSizes:
    """Tamanhos do experimento "dados uma vez só" (só a lição 02 usa)."""

    #: quantas cópias empilhadas de X_train formam o bloco de dados enviado às tarefas
    repeat: int
    #: quantas tarefas leem esse bloco em cada variante
    tasks: int


def transfer_sizes(scale: str | None = None) -> TransferSizes:
    """~20 MB de dados e 16 tarefas na escala ``full``; bem menos na ``smoke``."""
    return TransferSizes(
        repeat=pick(full=20, smoke=10, scale=scale), tasks=pick(full=16, smoke=6, scale=scale)
    )


# ---------------------------------------------------------------- grade


def validate_grid(grid: Iterable[Any]) -> list[tuple[int, int]]:
    """Confere a grade ``[(n_estimators, max_depth), ...]`` e a devolve como lista de tuplas.

    Levanta ``ValueError`` com mensagem em português se a grade está vazia, se um item não é um
    par, se um valor não é inteiro ou não é positivo. Chame antes de enviar qualquer tarefa.
    """
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
        pair = []
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
            pair.append(int(value))
        checked.append((pair[0], pair[1]))
    return checked


def estimated_cost(n_estimators: int, max_depth: int, n_samples: int | None = None) -> float:
    """Custo relativo (sem unidade) de treinar uma floresta: árvores × níveis úteis.

    Cada nível de uma árvore percorre as amostras uma vez; depois de ~log2(amostras) níveis as
    folhas ficam puras e os níveis seguintes quase não custam. É só uma estimativa para ordenar.
    """
    ((n_estimators, max_depth),) = validate_grid([(n_estimators, max_depth)])
    levels = float(max_depth)
    if n_samples is not None and n_samples > 1:
        levels = min(levels, math.log2(n_samples))
    return n_estimators * levels


def most_expensive_first(
    grid: Iterable[Any], n_samples: int | None = None
) -> list[tuple[int, int]]:
    """A grade ordenada das configurações mais caras para as mais baratas (:func:`estimated_cost`).

    Enviar as tarefas longas primeiro evita que a mais longa comece por último, com os outros
    núcleos já parados (a regra LPT, *longest processing time first*).
    """
    checked = validate_grid(grid)
    return sorted(checked, key=lambda nd: estimated_cost(*nd, n_samples), reverse=True)


# ---------------------------------------------------------------- treino


def fit_and_score(
    n_estimators: int,
    max_depth: int,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    y_test: Any,
    random_state: int = 42,
    *,
    n_jobs: int | None = None,
) -> tuple[int, int, float, float]:
    """Treina uma ``RandomForestRegressor`` e devolve ``(n_estimators, max_depth, mse, segundos)``.

    ``segundos`` inclui treino e avaliação, como no roteiro original. ``n_jobs`` é repassado ao
    scikit-learn (``-1`` = todos os núcleos, em threads).
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


# ---------------------------------------------------------------- limites de speedup


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

    Nenhum escalonamento termina antes da tarefa mais longa nem antes de ``trabalho / núcleos``;
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


# ---------------------------------------------------------------- floresta em blocos


class Chunk(NamedTuple):
    """Um bloco de árvores: as árvores ``first_tree .. first_tree + n_trees - 1`` de uma floresta."""

    n_estimators: int
    max_depth: int
    first_tree: int
    n_trees: int


class ChunkResult(NamedTuple):
    """O que uma tarefa de bloco devolve: soma das previsões das suas árvores e o tempo gasto."""

    n_estimators: int
    max_depth: int
    first_tree: int
    n_trees: int
    prediction_sum: np.ndarray
    seconds: float


def split_trees(n_estimators: int, n_chunks: int) -> list[tuple[int, int]]:
    """Divide ``n_estimators`` árvores em até ``n_chunks`` blocos ``(primeira, quantidade)``."""
    if n_estimators <= 0 or n_chunks <= 0:
        raise ValueError(
            f"n_estimators e n_chunks devem ser positivos, recebi {n_estimators} e {n_chunks}."
        )
    n_chunks = min(n_chunks, n_estimators)
    base, extra = divmod(n_estimators, n_chunks)
    out, first = [], 0
    for i in range(n_chunks):
        size = base + (1 if i < extra else 0)
        out.append((first, size))
        first += size
    return out


def plan_chunks(
    grid: Iterable[Any], cores: int, chunks_per_core: int = 4, n_samples: int | None = None
) -> list[Chunk]:
    """Blocos de custo parecido para toda a grade, os mais caros primeiro.

    O custo-alvo de um bloco é ``custo total / (núcleos × chunks_per_core)``: cada configuração
    vira tantos blocos quantos couberem no seu custo (ao menos um).
    """
    checked = most_expensive_first(grid, n_samples)
    if cores <= 0 or chunks_per_core <= 0:
        raise ValueError(
            f"cores e chunks_per_core devem ser positivos, recebi {cores} e {chunks_per_core}."
        )
    costs = [estimated_cost(n, d, n_samples) for n, d in checked]
    target = sum(costs) / (cores * chunks_per_core)
    chunks = []
    for (n, d), cost in zip(checked, costs, strict=True):
        for first, size in split_trees(n, max(1, round(cost / target))):
            chunks.append(Chunk(n, d, first, size))
    return sorted(
        chunks, key=lambda c: estimated_cost(c.n_trees, c.max_depth, n_samples), reverse=True
    )


def fit_forest_chunk(
    n_trees: int,
    max_depth: int,
    X_train: Any,
    y_train: Any,
    *,
    first_tree: int = 0,
    random_state: int = 42,
) -> Any:
    """Treina as árvores ``first_tree ..`` da floresta ``RandomForestRegressor(random_state=...)``.

    O scikit-learn sorteia uma semente por árvore, em sequência, de ``RandomState(random_state)``.
    Pulando as ``first_tree`` primeiras sementes (o mesmo truque do ``warm_start``), o bloco
    recebe exatamente as árvores que a floresta inteira teria nessas posições.
    """
    from sklearn.ensemble import RandomForestRegressor

    if first_tree < 0:
        raise ValueError(f"first_tree deve ser ≥ 0, recebi {first_tree}.")
    rng = np.random.RandomState(random_state)
    rng.randint(MAX_INT, size=first_tree)  # sementes das árvores anteriores a este bloco
    model = RandomForestRegressor(n_estimators=n_trees, max_depth=max_depth, random_state=rng)
    model.fit(X_train, y_train)
    model.random_state = random_state  # o modelo mostra a semente da floresta, não o gerador
    return model


def merge_forests(forests: Sequence[Any]) -> Any:
    """Junta florestas treinadas nos mesmos dados numa só (as árvores, na ordem dada)."""
    if not forests:
        raise ValueError("Nenhuma floresta para juntar.")
    first = forests[0]
    for other in forests[1:]:
        if other.n_features_in_ != first.n_features_in_ or other.max_depth != first.max_depth:
            raise ValueError(
                "Só dá para juntar florestas com o mesmo número de variáveis e a mesma max_depth."
            )
    merged = copy.copy(first)
    merged.estimators_ = [tree for forest in forests for tree in forest.estimators_]
    merged.n_estimators = len(merged.estimators_)
    return merged


def fit_chunk_and_predict(
    chunk: Chunk, X_train: Any, y_train: Any, X_test: Any, random_state: int = 42
) -> ChunkResult:
    """Treina um bloco e devolve a SOMA das previsões das suas árvores em ``X_test``.

    Devolver previsões (não as árvores) mantém a tarefa leve: uma floresta profunda ocupa
    centenas de MB, as previsões só ``len(X_test)`` números.
    """
    start = time.perf_counter()
    model = fit_forest_chunk(
        chunk.n_trees,
        chunk.max_depth,
        X_train,
        y_train,
        first_tree=chunk.first_tree,
        random_state=random_state,
    )
    pred_sum = model.predict(X_test) * chunk.n_trees
    return ChunkResult(*chunk, pred_sum, time.perf_counter() - start)


def combine_chunks(
    parts: Iterable[ChunkResult], y_test: Any
) -> list[tuple[int, int, float, float]]:
    """Junta os blocos de cada configuração: ``(n_estimators, max_depth, mse, segundos somados)``.

    A previsão da floresta é a média das árvores: soma dos blocos / ``n_estimators``.
    Levanta ``ValueError`` se faltar ou sobrar árvore em alguma configuração.
    """
    y_test = np.asarray(y_test, dtype=float)
    groups: dict[tuple[int, int], list[ChunkResult]] = {}
    for part in parts:
        groups.setdefault((part.n_estimators, part.max_depth), []).append(part)
    out = []
    for (n, d), chunk_parts in groups.items():
        trees = sorted((p.first_tree, p.n_trees) for p in chunk_parts)
        expected = 0
        for first, size in trees:
            if first != expected:
                raise ValueError(f"Configuração {(n, d)}: blocos de árvores incompletos {trees}.")
            expected += size
        if expected != n:
            raise ValueError(f"Configuração {(n, d)}: blocos somam {expected} árvores, não {n}.")
        prediction = sum(p.prediction_sum for p in chunk_parts) / n
        mse = float(np.mean((y_test - prediction) ** 2))
        out.append((n, d, mse, float(sum(p.seconds for p in chunk_parts))))
    return out


# ---------------------------------------------------------------- resultados e progresso


def results_path(name: str) -> Path:
    """Caminho do CSV ``<pasta de resultados>/<name>.csv``."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(
            "O nome do resultado deve ser um nome de arquivo simples (ex.: '02_busca'), "
            f"recebi {name!r}."
        )
    return results_dir() / f"{name}.csv"


def save_results(
    results: Iterable[Sequence[Any]], name: str, columns: Sequence[str] = RESULT_COLUMNS
) -> Path:
    """Grava os resultados (uma tupla por linha) em ``results/<name>.csv`` e devolve o caminho."""
    path = results_path(name)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(results)
    return path


def gather_with_progress(
    refs: Sequence[Any],
    *,
    desc: str = "tarefas",
    csv_path: Path | str | None = None,
    columns: Sequence[str] = RESULT_COLUMNS,
    timeout_s: float | None = None,
) -> list[Any]:
    """Espera as tarefas com ``ray.wait`` e uma barra ``tqdm``; devolve na ordem de envio.

    Com ``csv_path``, cada resultado é gravado no CSV assim que chega (o arquivo é recriado no
    início): se a busca cair no meio, o que já terminou está salvo. Com ``timeout_s``, levanta
    ``TimeoutError`` se nenhuma tarefa terminar nesse intervalo (em vez de esperar para sempre).
    """
    import ray
    from tqdm import tqdm

    refs = list(refs)
    position = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    pending = list(refs)
    fh = None
    try:
        if csv_path is not None:
            fh = Path(csv_path).open("w", newline="", encoding="utf-8")
            writer = csv.writer(fh)
            writer.writerow(columns)
            fh.flush()
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
                    if fh is not None:
                        writer.writerow(value)
                        fh.flush()
                    bar.update(1)
    finally:
        if fh is not None:
            fh.close()
    return results
