"""As abordagens que a seção de busca do benchmark mede (:mod:`tools.bench.search_bench`).

Cada ``run_*`` executa a busca inteira uma vez e devolve ``[(n, profundidade, mse, segundos)]``:
o laço, as tarefas Ray (roteiro, mais caras primeiro, blocos de árvores) e as ferramentas da
lição 03 (Ray Tune e ``GridSearchCV`` no Ray pelo backend joblib). :func:`run_side_by_side` mede
o limite: o mesmo laço em vários processos ao mesmo tempo, sem Ray.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import queue
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from labutils.lesson02 import fit_and_score, most_expensive_first
from labutils.search import RANDOM_STATE, validate_grid
from labutils.timing import Timer
from labutils.tuning import (
    PAIR_KEY,
    cv_rows,
    first_trial_delay,
    progress_callback,
    tune_table,
    validate_space,
)
from tools.lesson_code import load

#: a floresta em blocos de árvores é escrita nas células da lição 02
LESSON_02 = load("02_busca_hiperparametros")


def run_loop(grid, data, n_jobs=None) -> list[tuple[int, int, float, float]]:
    X_train, y_train, X_test, y_test = data
    return [fit_and_score(n, d, X_train, y_train, X_test, y_test, n_jobs=n_jobs) for n, d in grid]


def _side_copy(grid, data, barrier, results) -> None:
    """Uma cópia de :func:`run_side_by_side`: aquece, espera as outras e roda o laço inteiro."""
    try:
        fit_and_score(5, 3, *data)  # importa e aquece o scikit-learn antes da largada
        barrier.wait()
        results.put(run_loop(grid, data))
    except BaseException as err:  # o processo pai levanta o erro em vez de esperar à toa
        results.put(f"{type(err).__name__}: {err}")


def run_side_by_side(
    grid, data, copies: int, timeout: float
) -> tuple[float, list[list[tuple[int, int, float, float]]]]:
    """``copies`` processos, cada um com o laço da grade inteira, largando juntos.

    Devolve ``(segundos da largada até a última cópia terminar, os resultados de cada cópia)``.
    Processos comuns (``spawn``) e não tarefas Ray: o que se quer medir é o que os núcleos dão a
    várias florestas ao mesmo tempo (memória e cache divididos), sem o escalonador, o object store
    e os workers do Ray, que são justamente o custo que as abordagens Ray pagam. A partida dos
    processos e o import do scikit-learn ficam fora da medida (a barreira); nenhum processo é
    fixado num núcleo, como os workers do Ray também não são.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(copies + 1)  # + o processo pai, que marca a largada
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_side_copy, args=(grid, data, barrier, results), daemon=True)
        for _ in range(copies)
    ]
    for proc in procs:
        proc.start()
    try:
        barrier.wait(timeout=timeout)
        with Timer() as t:
            got = [results.get(timeout=timeout) for _ in procs]
        seconds = t.seconds
    except (queue.Empty, threading.BrokenBarrierError) as err:
        raise RuntimeError(
            f"lado a lado: as {copies} cópias não terminaram em {timeout:g} s ({err!r})."
        ) from None
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    errors = [g for g in got if isinstance(g, str)]
    if errors:
        raise RuntimeError(f"lado a lado: uma cópia falhou: {errors[0]}")
    return seconds, got


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

    fit_chunk_and_predict = LESSON_02.fit_chunk_and_predict

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
    return LESSON_02.combine_chunks(parts, data[3])


def grid_space(grid: Sequence[Any]) -> dict[str, Any]:
    """A grade ``[(n, d), ...]`` como espaço do Tune: um trial por par, na ordem dada."""
    from ray import tune

    pairs = validate_grid(grid)
    return {PAIR_KEY: tune.grid_search([{"n_estimators": n, "max_depth": d} for n, d in pairs])}


def forest_params(config: Mapping[str, Any]) -> tuple[int, int]:
    """``(n_estimators, max_depth)`` de um config do Tune (com ou sem a chave ``floresta``)."""
    params = config.get(PAIR_KEY, config)
    return int(params["n_estimators"]), int(params["max_depth"])


def forest_trainable(config: Mapping[str, Any], data: Sequence[Any]) -> None:
    """Um trial: treina a floresta do config e reporta o MSE na VALIDAÇÃO (``data[2:]``)."""
    from ray import tune

    inicio = time.time()  # quando o trial começou: ver first_trial_delay
    n, d = forest_params(config)
    _, _, mse, seconds = fit_and_score(n, d, *data, random_state=RANDOM_STATE)
    tune.report({"mse": mse, "segundos": seconds, "arvores": n, "inicio": inicio})


def run_tuner(
    trainable: Any,
    space: Mapping[str, Any],
    data: Sequence[Any],
    *,
    name: str,
    storage: Path | str,
    n_trials: int | None = None,
) -> Any:
    """O ``Tuner`` da lição 03 (1 CPU por trial, tantos ao mesmo tempo quantos CPUs), com o
    espaço conferido antes; devolve o ``ResultGrid``."""
    import ray
    from ray import tune

    validate_space(space)
    cores = int(ray.cluster_resources().get("CPU", 1))
    trainable = tune.with_resources(tune.with_parameters(trainable, data=data), {"cpu": 1})
    tuner = tune.Tuner(
        trainable,
        param_space=dict(space),
        tune_config=tune.TuneConfig(
            metric="mse", mode="min", max_concurrent_trials=max(1, cores), reuse_actors=True
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(Path(storage).resolve()),
            verbose=0,
            callbacks=[progress_callback(n_trials, name)] if n_trials else None,
        ),
    )
    # o Tune imprime um quadro e caminhos a cada busca mesmo com verbose=0
    with contextlib.redirect_stdout(io.StringIO()):
        return tuner.fit()


def grid_search_cv(grid: Sequence[Any], data: Sequence[Any], *, n_jobs: int | None = None):
    """O ``GridSearchCV`` da lição 03: candidatos na ordem da grade, validando SEMPRE em
    ``(X_val, y_val)`` (``PredefinedSplit``), ``refit=False``."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.model_selection import GridSearchCV, PredefinedSplit

    X_train, y_train, X_val, y_val = data
    X = np.concatenate([np.asarray(X_train), np.asarray(X_val)])
    y = np.concatenate([np.asarray(y_train), np.asarray(y_val)])
    fold = np.r_[np.full(len(X_train), -1), np.zeros(len(X_val), dtype=int)]
    search = GridSearchCV(
        RandomForestRegressor(random_state=RANDOM_STATE),
        [{"n_estimators": [n], "max_depth": [d]} for n, d in validate_grid(grid)],
        scoring="neg_mean_squared_error",
        cv=PredefinedSplit(fold),
        refit=False,
        n_jobs=n_jobs,
    )
    return search.fit(X, y)


def run_tune(grid, data, n_samples, delays=None) -> list[tuple[int, int, float, float]]:
    """A grade como ``Tuner`` (lição 03); os resultados do Tune vão para uma pasta temporária.

    ``delays``: se for uma lista, recebe quantos segundos o 1º trial levou para começar.
    """
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
