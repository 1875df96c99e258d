"""As abordagens que a seção de busca do benchmark mede (:mod:`tools.bench.search_bench`).

Cada ``run_*`` executa a busca inteira uma vez e devolve ``[(n, profundidade, mse, segundos)]``:
o laço, as tarefas Ray (roteiro, mais caras primeiro, blocos de árvores) e as ferramentas da
lição 03 (Ray Tune e ``GridSearchCV`` no Ray pelo backend joblib).
"""

from __future__ import annotations

import os
import tempfile
import time

from labutils.search import (
    combine_chunks,
    fit_and_score,
    fit_chunk_and_predict,
    most_expensive_first,
)
from labutils.timing import Timer


def run_loop(grid, data, n_jobs=None) -> list[tuple[int, int, float, float]]:
    X_train, y_train, X_test, y_test = data
    return [fit_and_score(n, d, X_train, y_train, X_test, y_test, n_jobs=n_jobs) for n, d in grid]


def run_seed_ray(grid, data) -> list[tuple[int, int, float, float]]:
    """Como no roteiro: a função remota lê os dados de fora dela e as tarefas vão na ordem da grade.

    A função é definida a cada chamada, como numa sessão nova do roteiro: os dados capturados
    viajam junto com a definição da função (exportada uma vez por worker).
    """
    import ray

    X_train, y_train, X_test, y_test = data

    @ray.remote
    def treino_random_forest(n_estimators, max_depth):
        return fit_and_score(n_estimators, max_depth, X_train, y_train, X_test, y_test)

    return ray.get([treino_random_forest.remote(n, d) for n, d in grid])


def remote_fns():
    import ray

    @ray.remote
    def fit_config(n_estimators, max_depth, data):
        X_train, y_train, X_test, y_test = data
        return fit_and_score(n_estimators, max_depth, X_train, y_train, X_test, y_test)

    @ray.remote
    def fit_chunk(chunk, data):
        X_train, y_train, X_test, _ = data
        return fit_chunk_and_predict(chunk, X_train, y_train, X_test)

    return fit_config, fit_chunk


def run_expensive_first(grid, data, fit_config, n_samples) -> list[tuple[int, int, float, float]]:
    import ray

    data_ref = ray.put(data)
    return ray.get(
        [fit_config.remote(n, d, data_ref) for n, d in most_expensive_first(grid, n_samples)]
    )


def run_chunks(chunks, data, fit_chunk) -> list[tuple[int, int, float, float]]:
    import ray

    data_ref = ray.put(data)
    parts = ray.get([fit_chunk.remote(c, data_ref) for c in chunks])
    return combine_chunks(parts, data[3])


def run_tune(grid, data, n_samples, delays=None) -> list[tuple[int, int, float, float]]:
    """A grade como ``Tuner`` (lição 03); os resultados do Tune vão para uma pasta temporária.

    ``delays``: se for uma lista, recebe quantos segundos o 1º trial levou para começar.
    """
    from labutils.tuning import (
        first_trial_delay,
        forest_trainable,
        grid_space,
        run_tuner,
        tune_table,
    )

    order = most_expensive_first(grid, n_samples)
    with tempfile.TemporaryDirectory(prefix="labutils-bench-tune-") as storage:
        started = time.time()
        result = run_tuner(forest_trainable, grid_space(order), data, name="bench", storage=storage)
        table = tune_table(result)
    if delays is not None:
        delays.append(first_trial_delay(result, started))
    return [(int(n), int(d), float(m), float(s)) for n, d, m, _, s in table.values.tolist()]


def run_joblib_ray(grid, data, n_samples) -> list[tuple[int, int, float, float]]:
    """``GridSearchCV`` com ``joblib.parallel_backend("ray")`` (lição 03)."""
    import joblib
    from ray.util.joblib import register_ray

    from labutils.tuning import cv_rows, grid_search_cv

    register_ray()
    with joblib.parallel_backend("ray"):
        return cv_rows(grid_search_cv(most_expensive_first(grid, n_samples), data, n_jobs=-1))


def warm_up(cores: int) -> float:
    """Sobe um worker por núcleo, com o scikit-learn importado (fora das medidas)."""
    import ray

    @ray.remote
    def warm():
        import sklearn.ensemble  # noqa: F401

        time.sleep(0.3)  # segura este worker para que a próxima tarefa vá para outro
        return os.getpid()

    with Timer() as t:
        ray.get([warm.remote() for _ in range(2 * cores)])
    return t.seconds
