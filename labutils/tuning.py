"""Lição 03, o que não é o assunto dela (que está nas células): tabelas e conferências."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

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
