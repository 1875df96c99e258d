"""TensorFlow das lições 05 a 07, o que não é o assunto delas: os detalhes dos dispositivos (GPUs e
o erro de dividir tarde demais), a validação separada do treino, o modelo gravado pela lição 05 e
as medidas do treino. Importa o TensorFlow sem iniciar os
dispositivos (na lição 07, depois de ``multiworker.use_legacy_keras()``).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

# ---------------------------------------------------------------- os dispositivos da lição 05

#: memória de cada GPU lógica quando uma GPU só é dividida (a rede da lição 05 usa bem menos)
LOGICAL_GPU_MEMORY_MB = 1024


class DevicesAlreadyInitializedError(RuntimeError):
    """Os dispositivos do TensorFlow já foram inicializados com outra configuração."""


@dataclass(frozen=True)
class Devices:
    """O que ``setup_devices`` (lição 05) encontrou: ``kind`` (``"gpu"`` ou ``"cpu"``), os
    dispositivos físicos e os lógicos que a ``MirroredStrategy()`` vai usar."""

    kind: str
    physical: tuple[str, ...]
    logical: tuple[str, ...]

    @property
    def num_replicas(self) -> int:
        return len(self.logical)

    def describe(self) -> str:
        if self.kind == "gpu" and len(self.physical) == 1 and len(self.logical) > 1:
            head = (
                f"1 GPU física dividida em {len(self.logical)} GPUs lógicas (mostra o mecanismo "
                "da estratégia; as réplicas dividem a mesma GPU)."
            )
        elif self.kind == "gpu":
            head = f"{len(self.physical)} GPU(s) física(s): uma réplica por GPU."
        else:
            head = (
                f"Sem GPU: a CPU física foi dividida em {len(self.logical)} dispositivos lógicos "
                "(mostra o mecanismo da estratégia; não acrescenta hardware)."
            )
        lines = [head, "Dispositivos lógicos usados pela estratégia:"]
        return "\n".join(lines + [f"  - {name}" for name in self.logical])


@contextmanager
def explain_late_split(kind: str, count: int):
    """Em volta de ``tf.config.set_logical_device_configuration``: se o TF já iniciou os
    dispositivos, segue quando a divisão já é a pedida; senão, diz como resolver."""
    try:
        yield
    except RuntimeError as err:  # o TF já inicializou os dispositivos deste processo
        current = len(tf.config.list_logical_devices(kind))
        if current != count:
            raise DevicesAlreadyInitializedError(
                f"O TensorFlow já inicializou os dispositivos deste processo ({current} {kind}(s) "
                f"lógica(s)), então não dá mais para dividir a {kind} em {count}.\n"
                "Como resolver: reinicie o kernel (Kernel > Restart) e chame setup_devices() logo "
                "no início, antes de qualquer outra operação do TensorFlow (criar tensores, "
                "modelos ou datasets)."
            ) from err


def use_gpus(gpus: list, count: int) -> Devices:
    """Com uma GPU só, ela dividida em ``count`` GPUs lógicas de :data:`LOGICAL_GPU_MEMORY_MB`;
    com várias, uma réplica por GPU, com memória sob demanda."""
    if len(gpus) == 1 and count > 1:
        memory = tf.config.LogicalDeviceConfiguration(memory_limit=LOGICAL_GPU_MEMORY_MB)
        with explain_late_split("GPU", count):
            tf.config.set_logical_device_configuration(gpus[0], [memory] * count)
    else:
        for gpu in gpus:
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError:  # já inicializado: mantém a configuração em vigor
                pass
    logical = tf.config.list_logical_devices("GPU")
    return Devices("gpu", tuple(g.name for g in gpus), tuple(d.name for d in logical))


# ---------------------------------------------------------------- a validação


def split_validation(
    train: tf.data.Dataset, num_examples: int, fraction: float = 0.1
) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """``(treino, validação)``: a validação são os primeiros exemplos do TREINO (ordem fixa)."""
    num_val = max(1, int(num_examples * fraction))
    return train.skip(num_val), train.take(num_val)


# ---------------------------------------------------------------- o modelo gravado


def lesson_model_path() -> Path:
    """Onde a lição 05 grava o modelo que a lição 06 lê: ``results/modelos/cifar100_cnn.keras``."""
    from labutils.config import results_dir

    return results_dir() / "modelos" / "cifar100_cnn.keras"


def save_lesson_model(model: tf.keras.Model, path: str | os.PathLike | None = None) -> Path:
    """Grava o modelo (padrão: :func:`lesson_model_path`) sem deixar um pela metade."""
    path = Path(path) if path is not None else lesson_model_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}-{os.getpid()}-parcial.keras")
    model.save(partial)
    os.replace(partial, path)
    return path


#: a probabilidade da classe certa no lote de prova da perda (:func:`loss_mismatch`)
SURE = 0.9


def loss_mismatch(model: tf.keras.Model, x: Any, y: Any) -> str | None:
    """O par saída/perda julgado pelo VALOR da perda compilada, não pela configuração (que
    aceita perdas em texto e funções): num lote em que a classe certa tem probabilidade
    :data:`SURE`, a entropia cruzada certa dá -log(SURE). ``None`` se dá; senão o porquê."""
    out = np.asarray(model(x, training=False))
    rows, num_classes = out.shape
    gives_probabilities = bool((out >= 0).all() and np.allclose(out.sum(axis=1), 1, atol=1e-3))
    sure = np.full((rows, num_classes), (1 - SURE) / (num_classes - 1), dtype=np.float32)
    sure[np.arange(rows), np.asarray(y)] = SURE
    y_pred = sure if gives_probabilities else np.log(sure)  # o que a saída do modelo é
    loss = float(model.compute_loss(x=x, y=tf.constant(y), y_pred=tf.constant(y_pred)))
    expected = -float(np.log(SURE))
    if abs(loss - expected) <= 1e-3:
        return None
    why = (
        "Incoerência: a última camada tem softmax (devolve probabilidades), mas a perda espera "
        "logits (from_logits=True) e aplica a softmax de novo: use from_logits=False (o padrão) "
        "ou tire a softmax."
        if gives_probabilities
        else "Incoerência: a última camada é linear (devolve logits), mas a perda espera "
        "probabilidades (from_logits=False): use from_logits=True ou ponha a softmax."
    )
    return (
        f"A perda compilada dá {loss:.3f} num lote em que a classe certa tem probabilidade "
        f"{SURE:g}; a entropia cruzada dá -log({SURE:g}) = {expected:.3f}. {why}"
    )


def check_loss_activation(model: tf.keras.Model) -> str:
    """Confere se a saída da última camada combina com a perda compilada (:func:`loss_mismatch`,
    num lote de 8 entradas aleatórias): uma frase, ou ``ValueError``."""
    rows = 8
    x = np.random.default_rng(0).random((rows, *model.input_shape[1:]), dtype=np.float32)
    if problem := loss_mismatch(model, x, np.arange(rows) % model.output_shape[-1]):
        raise ValueError(problem)
    activation = getattr(model.layers[-1], "activation", None)
    return f"ok: a perda compilada combina com a última camada ('{getattr(activation, '__name__', activation)}')"


# ---------------------------------------------------------------- medidas do treino
class EpochTimer(tf.keras.callbacks.Callback):
    """Cronometra cada época do ``fit`` (``callbacks=[EpochTimer(imagens por época)]``); a 1ª
    inclui a compilação, e :attr:`steady_images_per_second` a ignora se houve outras."""

    def __init__(self, num_examples: int):
        super().__init__()
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
        return [self.num_examples / s for s in self.epoch_seconds]

    @property
    def steady_images_per_second(self) -> float:
        seconds = self.epoch_seconds[1:] or self.epoch_seconds
        return self.num_examples * len(seconds) / sum(seconds)


class GpuSampler:
    """Amostra a utilização das GPUs (``nvidia-smi``) num ``with``; sem ela, fica vazio."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.samples: list[tuple[int, float]] = []  # (índice da GPU, utilização %)
        self._stop = threading.Event()

    def _loop(self) -> None:
        cmd = ["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits"]
        while True:
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=True)
            except (OSError, subprocess.SubprocessError):
                return  # sem nvidia-smi: só CPU
            for line in out.stdout.strip().splitlines():
                index, util = line.split(",")
                self.samples.append((int(index), float(util)))
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> GpuSampler:
        self.samples = []
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def mean_utilization(self) -> dict[int, float]:
        """Utilização média (%) de cada GPU durante o bloco."""
        by_gpu: dict[int, list[float]] = {}
        for index, util in self.samples:
            by_gpu.setdefault(index, []).append(util)
        return {index: sum(v) / len(v) for index, v in sorted(by_gpu.items())}

    def summary(self) -> str:
        if not self.samples:
            return "Sem medição de GPU: nvidia-smi não está disponível nesta máquina (só CPU)."
        parts = [f"GPU {i}: {u:.0f}%" for i, u in self.mean_utilization().items()]
        return "Utilização média durante o treino: " + ", ".join(parts)
