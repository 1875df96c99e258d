"""Lição 02, o que não é o assunto dela: a grade, a divisão treino/validação/teste, os CSVs dos
resultados e a espera das tarefas com uma barra de progresso. O assunto (o treino de uma
configuração, o limite do speedup, a ordem das tarefas) está nas células ``# @save`` da lição, que
``make lesson-code`` publica em :mod:`labutils.lesson02`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from labutils.config import results_dir

#: a semente de toda floresta das lições 02 e 03 (e da divisão dos dados)
RANDOM_STATE = 42


# ---------------------------------------------------------------- a grade
def validate_grid(grid: Iterable[Any]) -> list[tuple[int, int]]:
    """Confere a grade ``[(n_estimators, max_depth), ...]`` (não vazia, pares de inteiros
    positivos) e a devolve como lista de tuplas; senão ``ValueError`` em português. Chame antes
    de enviar qualquer tarefa."""
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
        checked.append((int(item[0]), int(item[1])))
    return checked


# A cópia da célula ``# @save`` da seção 9a da lição 02 (``tools/lesson_code.COPIES``).


# ---------------------------------------------------------------- os dados
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
        return (self.X_train, self.y_train, self.X_val, self.y_val)


def split_train_validation_test(
    X: Any,
    y: Any,
    *,
    test_size: float = 0.2,
    validation_size: float = 0.2,
    random_state: int = RANDOM_STATE,
) -> Split:
    """Separa ``test_size`` para o teste e, do resto, ``validation_size`` para a validação.

    A busca escolhe pela **validação**; o teste é usado uma vez, no fim (escolher no teste o
    deixaria otimista). A divisão é sempre a mesma: as lições 02 e 03 e o benchmark a dividem.
    """
    from sklearn.model_selection import train_test_split

    X_rest, X_test, y_rest, y_test = train_test_split(
        X, y, test_size=test_size, random_state=random_state
    )
    X_train, X_val, y_train, y_val = train_test_split(
        X_rest, y_rest, test_size=validation_size, random_state=random_state
    )
    return Split(X_train, y_train, X_val, y_val, X_test, y_test)


# ---------------------------------------------------------------- resultados
#: colunas dos resultados de uma busca (uma linha por configuração)
RESULT_COLUMNS = ("n_estimators", "max_depth", "mse", "segundos")


def results_path(name: str) -> Path:
    """Caminho do CSV ``<pasta de resultados>/<name>.csv``."""
    return results_dir() / f"{name}.csv"


def save_results(
    results: Iterable[Sequence[Any]], name: str, columns: Sequence[str] = RESULT_COLUMNS
) -> Path:
    """Grava os resultados (uma tupla por linha) em ``results/<name>.csv`` e devolve o caminho."""
    path = results_path(name)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(results)
    return path


def gather_with_progress(
    refs: Sequence[Any], *, desc: str = "tarefas", timeout_s: float | None = None
) -> list[Any]:
    """Espera as tarefas com ``ray.wait`` e uma barra ``tqdm``; devolve na ordem de envio. Com
    ``timeout_s``, ``TimeoutError`` se nenhuma tarefa terminar nesse intervalo."""
    import ray
    from tqdm import tqdm

    refs = list(refs)
    position = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    pending = list(refs)
    with tqdm(total=len(refs), desc=desc, unit="tarefa") as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=timeout_s)
            if not done:
                raise TimeoutError(
                    f"Nenhuma tarefa terminou em {timeout_s} s ({len(pending)} pendentes). "
                    "Confira se o cluster tem CPUs livres (ray.cluster_resources())."
                )
            for ref in done:
                results[position[ref]] = ray.get(ref)
                bar.update(1)
    return results
