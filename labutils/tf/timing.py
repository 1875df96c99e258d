"""Medições do treino com Keras: tempo por época, imagens por segundo e uso de GPU.

- :class:`EpochTimer`: callback do Keras que cronometra cada época (relógio de parede).
- :class:`GpuSampler`: amostra ``nvidia-smi`` em segundo plano durante um bloco ``with``;
  sem ``nvidia-smi`` (máquina só com CPU) fica vazio e diz isso, sem erro.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402


class EpochTimer(tf.keras.callbacks.Callback):
    """Cronometra cada época do ``fit``: ``model.fit(..., callbacks=[EpochTimer(n)])``.

    ``num_examples``: quantas imagens uma época processa (para as imagens por segundo).
    A primeira época inclui a compilação do grafo (``tf.function``); por isso
    :attr:`steady_images_per_second` ignora a primeira época quando há mais de uma.
    """

    def __init__(self, num_examples: int):
        super().__init__()
        if isinstance(num_examples, bool) or not isinstance(num_examples, int) or num_examples < 1:
            raise ValueError(f"num_examples deve ser um inteiro >= 1, recebi {num_examples!r}.")
        self.num_examples = num_examples
        self.epoch_seconds: list[float] = []
        self._start: float | None = None

    def on_train_begin(self, logs=None):
        self.epoch_seconds = []  # um novo fit começa do zero

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_seconds.append(time.perf_counter() - self._start)

    @property
    def images_per_second(self) -> list[float]:
        """Imagens por segundo em cada época."""
        return [self.num_examples / s for s in self.epoch_seconds]

    @property
    def steady_images_per_second(self) -> float:
        """Imagens por segundo depois da primeira época (ou a única, se só houve uma)."""
        if not self.epoch_seconds:
            raise RuntimeError("Nenhuma época medida: passe o EpochTimer em callbacks= do fit.")
        seconds = self.epoch_seconds[1:] or self.epoch_seconds
        return self.num_examples * len(seconds) / sum(seconds)


class GpuSampler:
    """Amostra a utilização das GPUs (``nvidia-smi``) a cada ``interval`` s dentro de um ``with``.

    >>> with GpuSampler() as gpu:      # doctest: +SKIP
    ...     model.fit(...)
    >>> gpu.summary()                  # doctest: +SKIP
    """

    QUERY = ["--query-gpu=index,utilization.gpu,memory.used", "--format=csv,noheader,nounits"]

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.available = shutil.which("nvidia-smi") is not None
        #: amostras (índice da GPU, utilização %, memória MiB)
        self.samples: list[tuple[int, float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample_once(self) -> None:
        try:
            out = subprocess.run(
                ["nvidia-smi", *self.QUERY], capture_output=True, text=True, timeout=5, check=True
            ).stdout
        except (OSError, subprocess.SubprocessError):
            self.available = False
            return
        for line in out.strip().splitlines():
            index, util, mem = (part.strip() for part in line.split(","))
            self.samples.append((int(index), float(util), float(mem)))

    def _loop(self) -> None:
        while not self._stop.is_set() and self.available:
            self._sample_once()
            self._stop.wait(self.interval)

    def __enter__(self) -> GpuSampler:
        self.samples = []
        self._stop.clear()
        if self.available:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def mean_utilization(self) -> dict[int, float]:
        """Utilização média (%) de cada GPU durante o bloco."""
        by_gpu: dict[int, list[float]] = {}
        for index, util, _ in self.samples:
            by_gpu.setdefault(index, []).append(util)
        return {index: sum(v) / len(v) for index, v in sorted(by_gpu.items())}

    def summary(self) -> str:
        """Resumo em português (ou o motivo de não haver medição)."""
        if not self.samples:
            return "Sem medição de GPU: nvidia-smi não está disponível nesta máquina (só CPU)."
        parts = [f"GPU {i}: {u:.0f}%" for i, u in self.mean_utilization().items()]
        return "Utilização média durante o treino: " + ", ".join(parts)
