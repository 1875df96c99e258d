"""Lição 03: a mesma busca da lição 02 com Ray Tune e com ``GridSearchCV`` no Ray (e as conferências
entre buscas).

- :func:`grid_space`, :func:`validate_space`: a grade no Tune, conferida antes de qualquer trial;
  :func:`range_space`: as faixas que a grade cobre, para um algoritmo de busca (Optuna);
- :func:`forest_trainable`: um trial = uma configuração, o MSE na validação reportado ao Tune;
- :func:`grow_forest`: a floresta cresce de ``passo`` em ``passo`` árvores (``warm_start``),
  com o MSE a cada acréscimo: é o orçamento que o ASHA corta (o trainable que reporta cada
  acréscimo ao Tune fica na lição 03);
- :func:`run_tuner`: o ``Tuner`` com 1 CPU por trial, para o ``make bench`` e os testes (a lição 03
  escreve o mesmo ``Tuner`` nas próprias células); :func:`progress_callback`: a barra de progresso;
  :func:`tune_table`: resultados em tabela; :func:`first_trial_delay`: quanto o Tune levou até o
  1º trial começar;
- :func:`grid_search_cv`: o ``GridSearchCV`` do scikit-learn na mesma grade e na mesma divisão
  treino/validação (``PredefinedSplit``); dentro de ``joblib.parallel_backend("ray")`` (depois de
  ``ray.util.joblib.register_ray()``) os treinos vão para o cluster Ray sem mudar a busca. A lição
  03 escreve essa busca nas próprias células (é o assunto dela) e usa daqui só :func:`cv_rows`;
- :func:`search_difference` (o que difere entre duas buscas, ou ``None``) e :func:`speedup_table`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from labutils.config import results_dir
from labutils.search import RANDOM_STATE, fit_and_score, speedup_bound, validate_grid

# o backend joblib do Ray avisa que ignora o "context" do scikit-learn: esperado, só confundiria
logging.getLogger("ray.util.multiprocessing.pool").setLevel(logging.ERROR)

#: chave do espaço do Tune que guarda os pares (n_estimators, max_depth) da grade
PAIR_KEY = "floresta"
FOREST_KEYS = ("n_estimators", "max_depth")


# ---------------------------------------------------------------- o espaço de busca


def grid_space(grid: Sequence[Any]) -> dict[str, Any]:
    """A grade ``[(n, d), ...]`` como espaço do Tune: um trial por par, na ordem dada."""
    from ray import tune

    pairs = validate_grid(grid)
    return {PAIR_KEY: tune.grid_search([{"n_estimators": n, "max_depth": d} for n, d in pairs])}


def range_space(grid: Sequence[Any]) -> dict[str, Any]:
    """Faixas inteiras que cobrem a grade (do menor ao maior valor de cada hiperparâmetro, os dois
    inclusive), para um algoritmo de busca escolher os pontos: ``tune.randint`` exclui o limite
    superior, por isso o ``+ 1``."""
    from ray import tune

    pairs = validate_grid(grid)
    return {
        key: tune.randint(min(p[i] for p in pairs), max(p[i] for p in pairs) + 1)
        for i, key in enumerate(FOREST_KEYS)
    }


def _possible_values(key: str, spec: Any) -> list[Any]:
    """Os valores que um item do espaço pode assumir (nos extremos, para domínios contínuos)."""
    from ray.tune.search.sample import Categorical, Domain, Integer

    if isinstance(spec, Mapping) and set(spec) == {"grid_search"}:
        return list(spec["grid_search"])
    if isinstance(spec, Categorical):
        return list(spec.categories)
    if isinstance(spec, Integer):  # randint/lograndint: o limite superior fica de fora
        return [spec.lower, spec.upper - 1]
    if isinstance(spec, Domain):
        raise ValueError(
            f"O item {key!r} do espaço de busca sorteia valores não inteiros ({type(spec).__name__}):"
            " use tune.grid_search, tune.choice ou tune.randint para parâmetros da floresta."
        )
    return [spec]


def validate_space(space: Mapping[str, Any]) -> dict[str, Any]:
    """Confere que todo ponto do espaço dá uma floresta válida; levanta ``ValueError`` se não.

    Aceita o espaço de :func:`grid_space` (pares em ``floresta``) e espaços com as chaves
    ``n_estimators``, ``max_depth`` e ``passo``. Rode antes do ``Tuner``: um erro de digitação
    aparece em milissegundos, não como um trial que falha lá dentro de um worker.
    """
    if not isinstance(space, Mapping) or not space:
        raise ValueError(
            "O espaço de busca deve ser um dict não vazio, como "
            "{'max_depth': tune.grid_search([4, 8]), 'n_estimators': 100}."
        )
    for key, spec in space.items():
        values = _possible_values(key, spec)
        if not values:
            raise ValueError(f"O item {key!r} do espaço de busca não tem nenhum valor.")
        if key == PAIR_KEY:
            validate_grid([(v.get("n_estimators"), v.get("max_depth")) for v in values])
        elif key in (*FOREST_KEYS, "passo"):
            for value in values:
                if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                    raise ValueError(
                        f"Espaço de busca: {key} deve ser um inteiro positivo (≥ 1) em todos os "
                        f"pontos, mas pode valer {value!r}. Nenhum trial foi iniciado."
                    )
    if "passo" in space and "n_estimators" in space:
        if max(_possible_values("passo", space["passo"])) > min(
            _possible_values("n_estimators", space["n_estimators"])
        ):
            raise ValueError("Espaço de busca: o passo não pode ser maior que n_estimators.")
    return dict(space)


def forest_params(config: Mapping[str, Any]) -> tuple[int, int]:
    """``(n_estimators, max_depth)`` de um config do Tune (com ou sem a chave ``floresta``)."""
    params = config.get(PAIR_KEY, config)
    return int(params["n_estimators"]), int(params["max_depth"])


# ---------------------------------------------------------------- os trials


def forest_trainable(config: Mapping[str, Any], data: Sequence[Any]) -> None:
    """Um trial: treina a floresta do config e reporta o MSE na VALIDAÇÃO (``data[2:]``)."""
    from ray import tune

    inicio = time.time()  # quando o trial começou: ver first_trial_delay
    n, d = forest_params(config)
    _, _, mse, seconds = fit_and_score(n, d, *data, random_state=RANDOM_STATE)
    tune.report({"mse": mse, "segundos": seconds, "arvores": n, "inicio": inicio})


def grow_forest(max_depth: int, n_estimators: int, step: int, data: Sequence[Any]):
    """Gera ``(árvores, mse na validação, segundos acumulados)`` a cada ``step`` árvores.

    Com ``warm_start`` cada ``fit`` só treina as árvores novas, e com a mesma semente a floresta
    de ``k`` árvores é idêntica à treinada de uma vez com ``n_estimators=k``.
    """
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.metrics import mean_squared_error

    X_train, y_train, X_val, y_val = data
    model = RandomForestRegressor(
        n_estimators=0, max_depth=max_depth, random_state=RANDOM_STATE, warm_start=True
    )
    start = time.perf_counter()
    trees = 0
    while trees < n_estimators:
        trees = min(trees + step, n_estimators)
        model.set_params(n_estimators=trees).fit(X_train, y_train)
        mse = float(mean_squared_error(y_val, model.predict(X_val)))
        yield trees, mse, time.perf_counter() - start


# ---------------------------------------------------------------- o Tuner


def progress_callback(total: int, desc: str) -> Any:
    """Um ``tune.Callback`` com uma barra ``tqdm`` que avança a cada trial terminado.

    Vai em ``RunConfig(callbacks=[...])``, com ``verbose=0``: no lugar das tabelas do Tune.
    """
    from ray import tune
    from tqdm import tqdm

    class Progress(tune.Callback):
        def setup(self, **info):
            self.bar = tqdm(total=total, desc=desc, unit="trial")

        def on_trial_complete(self, iteration, trials, trial, **info):
            self.bar.update(1)

        on_trial_error = on_trial_complete

        def on_experiment_end(self, trials, **info):
            self.bar.close()

    return Progress()


def run_tuner(
    trainable: Any,
    space: Mapping[str, Any],
    data: Sequence[Any],
    *,
    name: str,
    scheduler: Any = None,
    search_alg: Any = None,
    num_samples: int = 1,
    n_trials: int | None = None,
    storage: Path | str | None = None,
) -> Any:
    """Roda o ``Tuner`` (1 CPU por trial, tantos trials ao mesmo tempo quantos CPUs) e devolve o
    ``ResultGrid``. O espaço é conferido antes; os resultados ficam em ``results/tune/<name>``.

    ``search_alg`` (ex.: ``OptunaSearch()``) escolhe os pontos do espaço, ``num_samples`` vezes; a
    métrica e o modo vêm daqui (``mse``, ``min``). ``n_trials``: o total da barra de progresso.
    """
    import ray
    from ray import tune

    validate_space(space)
    cores = int(ray.cluster_resources().get("CPU", 1))
    storage = Path(storage) if storage is not None else results_dir() / "tune"
    trainable = tune.with_resources(tune.with_parameters(trainable, data=data), {"cpu": 1})
    tuner = tune.Tuner(
        trainable,
        param_space=dict(space),
        tune_config=tune.TuneConfig(
            metric="mse",
            mode="min",
            scheduler=scheduler,
            search_alg=search_alg,
            num_samples=num_samples,
            max_concurrent_trials=max(1, cores),
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(storage.resolve()),
            verbose=0,
            callbacks=[progress_callback(n_trials, name)] if n_trials else None,
        ),
    )
    # o Tune imprime um quadro e caminhos a cada busca mesmo com verbose=0: a barra basta
    with contextlib.redirect_stdout(io.StringIO()):
        return tuner.fit()


def first_trial_delay(result_grid: Any, fit_started: float) -> float:
    """Segundos entre chamar ``Tuner.fit()`` (``fit_started``, um ``time.time()``) e o início do
    1º trial (a métrica ``inicio``): o custo fixo do Tune antes de treinar qualquer coisa, isto é,
    subir o laço do Tune e os atores dos trials. Num cluster, relógios de nós diferentes podem
    diferir em alguns milissegundos."""
    return float(result_grid.get_dataframe()["inicio"].min() - fit_started)


def tune_table(result_grid: Any) -> Any:
    """Uma linha por trial: ``n_estimators``, ``max_depth``, ``mse`` (último reportado),
    ``arvores`` treinadas e ``segundos``; ordenada pelo MSE. Levanta erro se algum trial falhou."""
    if result_grid.errors:
        raise RuntimeError(f"{len(result_grid.errors)} trial(s) falharam: {result_grid.errors[0]}")
    df = result_grid.get_dataframe()
    pair = [f"config/{PAIR_KEY}/{k}" for k in FOREST_KEYS]
    cols = pair if pair[0] in df.columns else [f"config/{k}" for k in FOREST_KEYS]
    out = df[[*cols, "mse", "arvores", "segundos"]].copy()
    out.columns = [*FOREST_KEYS, "mse", "arvores", "segundos"]
    return out.sort_values("mse", kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- o GridSearchCV (joblib no Ray)


def grid_search_cv(grid: Sequence[Any], data: Sequence[Any], *, n_jobs: int | None = None):
    """``GridSearchCV`` na grade, validando SEMPRE em ``(X_val, y_val)`` (``PredefinedSplit``).

    Os candidatos vão na ordem da grade; ``refit=False``: o teste não participa. Use dentro de
    ``joblib.parallel_backend("ray")`` para espalhar os treinos pelo cluster Ray.
    """
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


def cv_rows(search: Any) -> list[tuple[int, int, float, float]]:
    """``(n_estimators, max_depth, mse na validação, segundos de treino)`` de um GridSearchCV."""
    res = search.cv_results_
    return [
        (int(p["n_estimators"]), int(p["max_depth"]), float(-score), float(fit_s))
        for p, score, fit_s in zip(
            res["params"], res["mean_test_score"], res["mean_fit_time"], strict=True
        )
    ]


# ---------------------------------------------------------------- conferências e comparação


def search_difference(
    got: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]], tol: float = 1e-9
) -> str | None:
    """O que difere entre duas buscas, em português, ou ``None`` se têm as mesmas configurações, a
    mesma melhor configuração e os mesmos MSE (até ``tol``). Linhas: ``(n, d, mse, ...)``."""
    got_mse = {(int(r[0]), int(r[1])): float(r[2]) for r in got}
    want = {(int(r[0]), int(r[1])): float(r[2]) for r in expected}
    if got_mse.keys() != want.keys():
        return f"configurações diferentes da busca local: {sorted(got_mse)} × {sorted(want)}"
    best_got, best_want = min(got_mse, key=got_mse.get), min(want, key=want.get)
    if best_got != best_want:
        return f"melhor configuração {best_got}, a busca local achou {best_want}"
    diff = max(abs(got_mse[k] - want[k]) for k in want)
    if not diff <= tol:
        return f"o MSE difere da busca local em até {diff:.3g} (> {tol:g})"
    return None


def speedup_table(loop_s: float, timings: Mapping[str, float], task_s, cores: float):
    """Tempos lado a lado: speedup sobre o laço, limite do hardware e fração do limite.

    ``task_s``: os tempos de cada configuração no laço (o limite é :func:`speedup_bound`).
    """
    import pandas as pd

    bound = speedup_bound(task_s, cores)
    rows = [("laço (referência)", loop_s)] + list(timings.items())
    df = pd.DataFrame(rows, columns=["abordagem", "tempo (s)"])
    df["speedup"] = loop_s / df["tempo (s)"]
    df["limite"] = [float("nan")] + [bound] * len(timings)  # o laço é a referência
    df["% do limite"] = 100 * df["speedup"] / df["limite"]
    return df
