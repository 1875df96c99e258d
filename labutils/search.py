"""Busca de hiperparâmetros da lição 02: o treino de uma configuração e a divisão dos dados.

As funções daqui são Python puro (sem Ray): o notebook as embrulha em ``@ray.remote`` para
mostrar o conceito. Assim elas podem ser testadas sem cluster e reaproveitadas na lição 04.

- :func:`split_train_validation_test`: treino / validação / teste, a mesma divisão nas lições 02 e
  03 (escolhe-se na validação; o teste é usado uma vez, no fim);
- :func:`fit_and_score`: treina uma Random Forest e devolve ``(n, profundidade, mse, segundos)``;

A grade, a fila de tarefas, a floresta em blocos e os resultados gravados linha a linha moram
nos seus módulos (:mod:`labutils.grid`, :mod:`labutils.schedule`, :mod:`labutils.chunks`,
:mod:`labutils.search_store`); as lições importam cada nome de onde ele é definido.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NamedTuple

from labutils.config import pick


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


# ---------------------------------------------------------------- dados


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
        """``(X_train, y_train, X_val, y_val)``: o que toda busca usa; o teste fica de fora."""
        return (self.X_train, self.y_train, self.X_val, self.y_val)


def split_train_validation_test(
    X: Any, y: Any, *, test_size: float = 0.2, validation_size: float = 0.2, random_state: int = 42
) -> Split:
    """Separa ``test_size`` para o teste e, do resto, ``validation_size`` para a validação.

    A busca escolhe a configuração pelo erro na **validação**; o teste só é usado uma vez, no fim,
    para a configuração escolhida (escolher no teste deixaria o erro do teste otimista demais).
    A divisão é sempre a mesma (``random_state``): as lições 02 e 03 e o benchmark a compartilham.
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

    O MSE é medido em ``(X_test, y_test)``: numa busca, passe aqui a **validação**
    (:func:`split_train_validation_test`); o teste fica para a configuração escolhida, no fim.
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
