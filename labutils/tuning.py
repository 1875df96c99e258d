"""Lição 03, o que não é o assunto dela (que está nas células): tabelas e conferências."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from labutils.lesson02 import speedup_bound

# o backend joblib do Ray avisa que ignora o "context" do scikit-learn: esperado, só confundiria
logging.getLogger("ray.util.multiprocessing.pool").setLevel(logging.ERROR)

PAIR_KEY = "floresta"  # a chave do espaço do Tune com os pares (n_estimators, max_depth)
FOREST_KEYS = ("n_estimators", "max_depth")


def first_trial_delay(result_grid: Any, fit_started: float) -> float:
    """Segundos de ``Tuner.fit()`` (``fit_started``) ao 1º trial: o custo fixo do Tune."""
    return float(result_grid.get_dataframe()["inicio"].min() - fit_started)


def tune_table(result_grid: Any) -> Any:
    """Uma linha por trial (a floresta, ``mse``, ``arvores``, ``segundos``), pelo MSE."""
    if result_grid.errors:
        raise RuntimeError(f"{len(result_grid.errors)} trial(s) falharam: {result_grid.errors[0]}")
    df = result_grid.get_dataframe()
    pair = [f"config/{PAIR_KEY}/{k}" for k in FOREST_KEYS]
    cols = pair if pair[0] in df.columns else [f"config/{k}" for k in FOREST_KEYS]
    out = df[[*cols, "mse", "arvores", "segundos"]].copy()
    out.columns = [*FOREST_KEYS, "mse", "arvores", "segundos"]
    return out.sort_values("mse", kind="stable").reset_index(drop=True)


def cv_rows(search: Any) -> list[tuple[int, int, float, float]]:
    """``(n_estimators, max_depth, mse na validação, segundos de treino)`` de um GridSearchCV."""
    res = search.cv_results_
    return [
        (int(p["n_estimators"]), int(p["max_depth"]), float(-score), float(fit_s))
        for p, score, fit_s in zip(
            res["params"], res["mean_test_score"], res["mean_fit_time"], strict=True
        )
    ]


def search_difference(
    got: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]], tol: float = 1e-9
) -> str | None:
    """O que difere entre duas buscas (linhas ``(n, d, mse, ...)``), ou ``None`` se têm as mesmas
    configurações, a mesma melhor e os mesmos MSE (até ``tol``)."""
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
    """Speedup de cada abordagem sobre o laço, o limite (dos tempos ``task_s``) e a fração dele."""
    import pandas as pd

    bound = speedup_bound(task_s, cores)
    rows = [("laço (referência)", loop_s)] + list(timings.items())
    df = pd.DataFrame(rows, columns=["abordagem", "tempo (s)"])
    df["speedup"] = loop_s / df["tempo (s)"]
    df["limite"] = [float("nan")] + [bound] * len(timings)  # o laço é a referência
    df["% do limite"] = 100 * df["speedup"] / df["limite"]
    return df


def round_robin_difference(pids: Sequence[int], workers: int) -> str | None:
    """O que foge da vez (``None`` se nada): o job ``k`` no mesmo processo do job ``k - workers``,
    e os ``workers`` primeiros em processos diferentes. É como o ``Pool`` do Ray distribui os jobs
    do joblib (``Pool._next_actor_index``, em ``ray/util/multiprocessing/pool.py``)."""
    pids = [int(p) for p in pids]
    first = pids[:workers]
    if len(set(first)) != len(first):
        return f"os {len(first)} primeiros jobs não ficaram em processos diferentes: {first}"
    for k in range(workers, len(pids)):
        if pids[k] != pids[k - workers]:
            return f"o job {k} rodou no PID {pids[k]}, não no do job {k - workers} ({pids[k - workers]})"
    return None


def asha_rungs(scheduler: Any) -> dict[int, list[tuple[str, float]]]:
    """Os registros do ASHA, degrau a degrau, na ordem de chegada: ``{degrau: [(trial_id, métrica)]}``.

    Lê a contabilidade do próprio ``ASHAScheduler`` depois do ``fit`` (``_Bracket._rungs``, um dict
    por degrau que guarda ``métrica × _metric_op`` na ordem em que os relatos chegaram: Ray 2.60,
    ``ray/tune/schedulers/async_hyperband.py``); o relógio dos trials não desempata dois relatos
    quase juntos. Fica de fora o degrau de ``max_t``, que só registra quem terminou."""
    rungs: dict[int, list[tuple[str, float]]] = {}
    for bracket in scheduler._brackets:
        for milestone, recorded in bracket._rungs:
            if milestone >= scheduler._max_t:
                continue
            rows = [(tid, float(v) / scheduler._metric_op) for tid, v in recorded.items()]
            rungs.setdefault(int(milestone), []).extend(rows)
    return dict(sorted(rungs.items()))


def rung_decisions(rungs: Mapping[int, Sequence[tuple[str, float]]], reduction_factor: float):
    """A regra do ASHA refeita (métrica a minimizar), uma linha por chegada a um degrau: o
    ``corte`` é o percentil ``100 / reduction_factor`` dos que chegaram **antes** (nenhum corte
    para o 1º) e ``parou`` diz se a métrica ficou acima dele."""
    import pandas as pd

    rows = []
    for rung, arrivals in rungs.items():
        for order, (trial_id, value) in enumerate(arrivals):
            before = [v for _, v in arrivals[:order]]
            cut = float(np.nanpercentile(before, 100 / reduction_factor)) if before else np.nan
            rows.append((rung, order + 1, trial_id, value, cut, bool(before) and value > cut))
    cols = ["degrau", "chegada", "trial_id", "mse", "corte", "parou"]
    return pd.DataFrame(rows, columns=cols)


def asha_decisions(scheduler: Any):
    """:func:`rung_decisions` dos registros de um ``ASHAScheduler`` já usado num ``fit``."""
    return rung_decisions(asha_rungs(scheduler), scheduler._reduction_factor)
