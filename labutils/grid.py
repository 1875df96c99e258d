"""A grade de hiperparâmetros (n_estimators, max_depth): validação e custo estimado.

Base de :mod:`labutils.search`, :mod:`labutils.chunks` e :mod:`labutils.search_store` (que a
reexporta): ``validate_grid`` rejeita grades inválidas antes de qualquer tarefa começar, e
``most_expensive_first`` ordena a grade pelas configurações mais caras primeiro.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def validate_grid(grid: Iterable[Any]) -> list[tuple[int, int]]:
    """Confere a grade ``[(n_estimators, max_depth), ...]`` e a devolve como lista de tuplas.

    Levanta ``ValueError`` com mensagem em português se a grade está vazia, se um item não é um
    par, se um valor não é inteiro ou não é positivo. Chame antes de enviar qualquer tarefa.
    """
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
        pair = []
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
            pair.append(int(value))
        checked.append((pair[0], pair[1]))
    return checked


def estimated_cost(n_estimators: int, max_depth: int, n_samples: int | None = None) -> float:
    """Custo relativo (sem unidade) de treinar uma floresta: árvores × níveis úteis.

    Cada nível de uma árvore percorre as amostras uma vez; depois de ~log2(amostras) níveis as
    folhas ficam puras e os níveis seguintes quase não custam. É só uma estimativa para ordenar.
    """
    ((n_estimators, max_depth),) = validate_grid([(n_estimators, max_depth)])
    levels = float(max_depth)
    if n_samples is not None and n_samples > 1:
        levels = min(levels, math.log2(n_samples))
    return n_estimators * levels


def most_expensive_first(
    grid: Iterable[Any], n_samples: int | None = None
) -> list[tuple[int, int]]:
    """A grade ordenada das configurações mais caras para as mais baratas (:func:`estimated_cost`).

    Enviar as tarefas longas primeiro evita que a mais longa comece por último, com os outros
    núcleos já parados (a regra LPT, *longest processing time first*).
    """
    checked = validate_grid(grid)
    return sorted(checked, key=lambda nd: estimated_cost(*nd, n_samples), reverse=True)
