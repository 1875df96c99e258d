"""Escala do laboratório: um único ajuste troca os tamanhos de todos os notebooks.

A variável de ambiente ``LABUTILS_SCALE`` escolhe a escala:

- ``full`` (padrão): os tamanhos do roteiro original, para a aula;
- ``smoke``: tamanhos mínimos, para o CI e para conferir rapidamente que tudo roda.

Nenhuma célula de notebook precisa ser editada: todos leem ``labutils.sizes()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

SCALE_ENV = "LABUTILS_SCALE"
SCALES = ("full", "smoke")
DEFAULT_SCALE = "full"


@dataclass(frozen=True)
class Sizes:
    """Tamanhos usados pelos notebooks numa escala."""

    scale: str
    #: grade de hiperparâmetros (n_estimators, max_depth) da lição 02
    grid: tuple[tuple[int, int], ...]
    #: exemplos do California Housing (``None`` = o conjunto inteiro, 20 640 linhas)
    housing_examples: int | None
    #: exemplos do CIFAR-100 usados no treino e no teste (``None`` = tudo)
    cifar_train_examples: int | None
    cifar_test_examples: int | None
    #: épocas de treino da lição 05 (MirroredStrategy)
    epochs: int
    #: lote por réplica (o lote global é este valor × número de réplicas)
    batch_per_replica: int
    #: workers e épocas do exercício multi-worker (lição 07)
    num_workers: int
    multiworker_epochs: int
    #: lição 03 (Ray Tune + ASHA): profundidades testadas, árvores de cada floresta no fim e
    #: árvores acrescentadas entre dois relatos ao Tune (o orçamento que o ASHA corta)
    asha_depths: tuple[int, ...]
    asha_trees: int
    asha_step: int

    @property
    def is_smoke(self) -> bool:
        return self.scale == "smoke"


_SIZES = {
    "full": Sizes(
        scale="full",
        grid=((100, 10), (200, 15), (300, 20), (400, 25), (500, 30)),
        housing_examples=None,
        cifar_train_examples=None,
        cifar_test_examples=None,
        epochs=20,
        batch_per_replica=64,
        num_workers=2,
        multiworker_epochs=5,
        asha_depths=(30, 20, 16, 12, 8, 4),
        asha_trees=300,
        asha_step=50,
    ),
    "smoke": Sizes(
        scale="smoke",
        grid=((10, 4), (20, 6), (30, 8)),
        housing_examples=2_000,
        cifar_train_examples=512,
        cifar_test_examples=256,
        epochs=3,
        batch_per_replica=64,
        num_workers=2,
        multiworker_epochs=2,
        asha_depths=(8, 6, 4, 2),
        asha_trees=20,
        asha_step=5,
    ),
}


def pick(*, full: T, smoke: T, scale: str | None = None) -> T:
    """Escolhe um valor conforme a escala: ``pick(full=200, smoke=10)``.

    Para tamanhos que só uma lição usa (cada módulo de lição declara os seus assim).
    """
    scale = current_scale() if scale is None else scale
    if scale not in SCALES:
        raise ValueError(f"Escala desconhecida: {scale!r}. Use uma destas: {', '.join(SCALES)}.")
    return full if scale == "full" else smoke


def current_scale() -> str:
    """Devolve a escala em vigor (``full`` ou ``smoke``), lida de ``LABUTILS_SCALE``."""
    value = os.environ.get(SCALE_ENV, DEFAULT_SCALE).strip().lower() or DEFAULT_SCALE
    if value not in SCALES:
        raise ValueError(
            f"{SCALE_ENV}={value!r} não é uma escala válida. "
            f"Use uma destas: {', '.join(SCALES)} (ex.: export {SCALE_ENV}=smoke)."
        )
    return value


def sizes(scale: str | None = None) -> Sizes:
    """Devolve os tamanhos da escala pedida (ou da escala em vigor)."""
    if scale is None:
        scale = current_scale()
    if scale not in _SIZES:
        raise ValueError(f"Escala desconhecida: {scale!r}. Use uma destas: {', '.join(SCALES)}.")
    return _SIZES[scale]
