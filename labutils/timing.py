"""Medição de tempo de parede (relógio monotônico), devolvendo números."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class Timer:
    """Cronômetro de contexto.

    >>> with Timer() as t:
    ...     soma = sum(range(1000))
    >>> t.seconds >= 0
    True

    ``t.seconds`` vale o tempo decorrido; dentro do bloco, é o tempo até agora.
    """

    def __init__(self) -> None:
        self._start: float | None = None
        self._end: float | None = None

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        self._end = None
        return self

    def __exit__(self, *exc: object) -> None:
        self._end = time.perf_counter()

    @property
    def seconds(self) -> float:
        if self._start is None:
            raise RuntimeError("O cronômetro ainda não foi iniciado: use `with Timer() as t:`.")
        end = self._end if self._end is not None else time.perf_counter()
        return end - self._start


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """Chama ``fn(*args, **kwargs)`` e devolve ``(resultado, segundos)``."""
    if not callable(fn):
        raise TypeError(f"timed precisa de uma função para chamar, recebi {fn!r}.")
    with Timer() as t:
        result = fn(*args, **kwargs)
    return result, t.seconds
