"""Uma floresta grande dividida em blocos de árvores, idênticos às árvores da floresta inteira.

:func:`plan_chunks`, :func:`fit_forest_chunk`, :func:`merge_forests`, :func:`combine_chunks` (lição
02, seção 9). Reexportado por :mod:`labutils.search`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from labutils.grid import estimated_cost, most_expensive_first
from labutils.schedule import list_schedule_makespan

#: maior semente que o scikit-learn sorteia para cada árvore (``sklearn.ensemble._forest.MAX_INT``)
MAX_INT = np.iinfo(np.int32).max


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
    grid: Iterable[Any],
    cores: int,
    chunks_per_core: int = 4,
    n_samples: int | None = None,
    *,
    tolerance: float = 0.01,
) -> list[Chunk]:
    """Blocos de custo parecido para toda a grade, os mais caros primeiro.

    Com ``k`` blocos por núcleo, o custo-alvo de um bloco é ``custo total / (núcleos × k)``, e cada
    configuração vira tantos blocos quantos couberem no seu custo (ao menos um). Blocos iguais
    ainda podem deixar um núcleo parado no fim da fila, à espera do último bloco do outro; por
    isso simulamos a fila com os custos estimados (:func:`list_schedule_makespan`) e, a partir
    de ``k = chunks_per_core``, usamos o primeiro ``k`` (até ``8 × chunks_per_core``) em que o
    núcleo mais carregado fica a menos de ``tolerance`` do ideal ``custo total / núcleos``; se
    nenhum chegar lá, o mais equilibrado deles.
    """
    checked = most_expensive_first(grid, n_samples)
    if cores <= 0 or chunks_per_core <= 0:
        raise ValueError(
            f"cores e chunks_per_core devem ser positivos, recebi {cores} e {chunks_per_core}."
        )
    config_costs = [estimated_cost(n, d, n_samples) for n, d in checked]
    best: tuple[float, list[Chunk]] | None = None
    for per_core in range(chunks_per_core, 8 * chunks_per_core + 1):
        chunks = _chunks_at(checked, config_costs, cores * per_core, n_samples)
        costs = [estimated_cost(c.n_trees, c.max_depth, n_samples) for c in chunks]
        makespan = list_schedule_makespan(costs, cores)
        if best is None or makespan < best[0]:
            best = (makespan, chunks)
        if makespan <= (1 + tolerance) * sum(costs) / cores:
            break
    return best[1]


def _chunks_at(
    checked: list[tuple[int, int]], costs: list[float], n_chunks: int, n_samples: int | None
) -> list[Chunk]:
    """Cerca de ``n_chunks`` blocos de custo parecido (``costs``: o de cada configuração de
    ``checked``), do mais caro para o mais barato."""
    target = sum(costs) / n_chunks
    chunks = [
        Chunk(n, d, first, size)
        for (n, d), cost in zip(checked, costs, strict=True)
        for first, size in split_trees(n, max(1, round(cost / target)))
    ]
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
