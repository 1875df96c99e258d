"""O cronômetro das lições: tempo de parede (relógio monotônico), em segundos."""

from __future__ import annotations

import time


class Timer:
    """Cronômetro de contexto; ``t.seconds`` é o tempo decorrido (no bloco, até agora)."""

    def __enter__(self) -> Timer:
        self._start, self._end = time.perf_counter(), None
        return self

    def __exit__(self, *exc: object) -> None:
        self._end = time.perf_counter()

    @property
    def seconds(self) -> float:
        return (self._end or time.perf_counter()) - self._start
