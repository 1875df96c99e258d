"""O cronômetro das lições: tempo de parede (relógio monotônico), em segundos."""

from __future__ import annotations

import time


class Timer:
    """Cronômetro de contexto; ``t.seconds`` é o tempo decorrido (dentro do bloco, até agora).

    >>> with Timer() as t:
    ...     soma = sum(range(1000))
    >>> t.seconds >= 0
    True
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
