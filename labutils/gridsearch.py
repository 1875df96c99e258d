"""Lição 03: o ``GridSearchCV`` do scikit-learn na grade da lição 02, com a mesma divisão
treino/validação (``PredefinedSplit``). Dentro de ``joblib.parallel_backend("ray")`` (depois de
``ray.util.joblib.register_ray()``), os treinos vão para o cluster Ray sem mudar a busca.

A lição 03 escreve esta mesma busca nas próprias células (é o assunto dela); daqui a usam o
``make bench`` e os testes, e a lição usa só :func:`cv_rows`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from labutils.grid import validate_grid
from labutils.tuning import RANDOM_STATE

# o backend joblib do Ray avisa que ignora o "context" do scikit-learn: esperado, só confundiria
logging.getLogger("ray.util.multiprocessing.pool").setLevel(logging.ERROR)


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
