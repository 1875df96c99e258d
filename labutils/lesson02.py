"""O código das células ``# @save`` de ``notebooks/02_busca_hiperparametros.ipynb``, na ordem da lição.

Gerado por ``make lesson-code`` (``tools/lesson_code.py``): não edite aqui; edite a lição e gere de novo.
"""

# @save
import copy
import heapq
import math
import os
import time
from typing import NamedTuple

import joblib
import numpy as np
import pandas as pd
import ray
from sklearn.ensemble import RandomForestRegressor

from labutils import Timer
from labutils.data import load_california_housing
from labutils.plots import plot_comparison, plot_speedups, plot_timeline
from labutils.raytools import init_ray
from labutils.search import (
    RANDOM_STATE,
    gather_with_progress,
    measured_bound,
    results_path,
    save_results,
    split_train_validation_test,
)


# @save
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
    max_features=1.0,
):
    """Treina uma ``RandomForestRegressor`` e devolve ``(n_estimators, max_depth, mse, segundos)``.

    O MSE é medido em ``(X_test, y_test)``: numa busca, passe a **validação**. ``segundos``
    inclui treino e avaliação; ``n_jobs`` e ``max_features`` vão ao scikit-learn.
    """
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.metrics import mean_squared_error

    start = time.perf_counter()
    model = RandomForestRegressor(
        n_estimators=n_estimators,
        max_depth=max_depth,
        max_features=max_features,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    model.fit(X_train, y_train)
    mse = float(mean_squared_error(y_test, model.predict(X_test)))
    return (n_estimators, max_depth, mse, time.perf_counter() - start)


# @save
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


def list_schedule(task_seconds, cores):
    """(núcleo, início, fim) de cada tarefa entregue NESTA ORDEM ao primeiro núcleo livre (no
    empate, o de menor número): o que o Ray faz com tarefas independentes de 1 CPU."""
    times = _check_tasks(task_seconds, cores)
    free_at = [(0.0, core) for core in range(max(1, int(cores)))]  # (livre a partir de, núcleo)
    out = []
    for t in times:
        start, core = heapq.heappop(free_at)
        out.append((core, start, start + float(t)))
        heapq.heappush(free_at, (start + float(t), core))
    return out


def list_schedule_makespan(task_seconds, cores):
    """O tempo total da fila de list_schedule."""
    return max(end for _, _, end in list_schedule(task_seconds, cores))


# @save
def estimated_cost(n_estimators, max_depth, n_samples=None):
    """Custo relativo de uma floresta, só para ordenar: árvores × níveis. Heurística: cada nível
    percorre no máximo todas as amostras, e contamos até ~log2(amostras) níveis, a altura de uma
    árvore equilibrada; árvores de regressão passam disso, com cada vez menos amostras por nível."""
    levels = float(max_depth)
    if n_samples is not None and n_samples > 1:
        levels = min(levels, math.log2(n_samples))
    return n_estimators * levels


def most_expensive_first(grid, n_samples=None):
    """A grade das configurações mais caras para as mais baratas (estimated_cost): a mais longa
    não começa por último, com os outros núcleos parados (a regra LPT)."""
    return sorted(grid, key=lambda nd: estimated_cost(*nd, n_samples), reverse=True)


# @save
MAX_INT = np.iinfo(np.int32).max  # a maior semente que o scikit-learn sorteia para uma árvore


class Chunk(NamedTuple):
    # as árvores first_tree .. first_tree + n_trees - 1 de uma floresta
    n_estimators: int
    max_depth: int
    first_tree: int
    n_trees: int


def split_trees(n_estimators, n_chunks):
    # Divide n_estimators árvores em até n_chunks blocos [(primeira, quantidade), ...].
    if n_estimators <= 0 or n_chunks <= 0:
        raise ValueError(
            f"n_estimators e n_chunks devem ser positivos, recebi {n_estimators} e {n_chunks}."
        )
    n_chunks = min(n_chunks, n_estimators)
    base, extra = divmod(n_estimators, n_chunks)
    sizes = [base + (1 if i < extra else 0) for i in range(n_chunks)]
    return [(sum(sizes[:i]), size) for i, size in enumerate(sizes)]


def fit_forest_chunk(
    n_trees, max_depth, X_train, y_train, *, first_tree=0, random_state=RANDOM_STATE
):
    # As árvores first_tree.. da RandomForestRegressor(random_state=random_state) inteira.
    if first_tree < 0:
        raise ValueError(f"first_tree deve ser ≥ 0, recebi {first_tree}.")
    rng = np.random.RandomState(random_state)
    rng.randint(MAX_INT, size=first_tree)  # consome as sementes das árvores anteriores ao bloco
    model = RandomForestRegressor(n_estimators=n_trees, max_depth=max_depth, random_state=rng)
    model.fit(X_train, y_train)
    model.random_state = random_state  # mostra a semente da floresta, não o gerador
    return model


def merge_forests(forests):
    # Junta florestas treinadas nos mesmos dados numa só (as árvores, na ordem dada).
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


# @save
def plan_chunks(grid, cores, chunks_per_core=4, n_samples=None, *, tolerance=0.01):
    # Blocos de custo parecido para toda a grade, os mais caros primeiro: o primeiro número de
    # blocos por núcleo (de chunks_per_core a 8×) cuja fila simulada fica a menos de tolerance
    # do ideal; se nenhum chegar lá, o mais equilibrado.
    checked = most_expensive_first(grid, n_samples)
    if cores <= 0 or chunks_per_core <= 0:
        raise ValueError(
            f"cores e chunks_per_core devem ser positivos, recebi {cores} e {chunks_per_core}."
        )
    config_costs = [estimated_cost(n, d, n_samples) for n, d in checked]

    def cost(chunk):
        return estimated_cost(chunk.n_trees, chunk.max_depth, n_samples)

    best = None
    for per_core in range(chunks_per_core, 8 * chunks_per_core + 1):
        target = sum(config_costs) / (cores * per_core)  # o custo de um bloco
        chunks = [
            Chunk(n, d, first, size)
            for (n, d), c in zip(checked, config_costs, strict=True)
            for first, size in split_trees(n, max(1, round(c / target)))
        ]
        chunks.sort(key=cost, reverse=True)
        costs = [cost(c) for c in chunks]
        makespan = list_schedule_makespan(costs, cores)
        if best is None or makespan < best[0]:
            best = (makespan, chunks)
        if makespan <= (1 + tolerance) * sum(costs) / cores:
            break
    return best[1]


class ChunkResult(NamedTuple):
    # o que uma tarefa de bloco devolve: a soma das previsões das suas árvores e o tempo
    n_estimators: int
    max_depth: int
    first_tree: int
    n_trees: int
    prediction_sum: np.ndarray
    seconds: float


def fit_chunk_and_predict(chunk, X_train, y_train, X_test, random_state=RANDOM_STATE):
    start = time.perf_counter()
    model = fit_forest_chunk(
        chunk.n_trees,
        chunk.max_depth,
        X_train,
        y_train,
        first_tree=chunk.first_tree,
        random_state=random_state,
    )
    prediction_sum = model.predict(X_test) * chunk.n_trees
    return ChunkResult(*chunk, prediction_sum, time.perf_counter() - start)


def combine_chunks(parts, y_test):
    # [(n_estimators, max_depth, mse, segundos somados)] por configuração; ValueError se faltar
    # ou sobrar árvore em alguma delas.
    y_test = np.asarray(y_test, dtype=float)
    groups = {}
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
