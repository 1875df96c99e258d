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


def check_loss_activation(model: tf.keras.Model) -> str:
    """Confere se a ativação da última camada combina com o ``from_logits`` da perda (``softmax``
    pede ``False``; linear, ``True``): uma frase, ou ``ValueError``."""
    activation = getattr(model.layers[-1], "activation", None)
    act_name = getattr(activation, "__name__", str(activation))
    config = model.loss.get_config() if hasattr(model.loss, "get_config") else {}
    from_logits = config.get("from_logits")
    if from_logits is None:
        raise ValueError(
            "Não consegui ler o from_logits da perda: compile o modelo com um objeto de perda."
        )
    if act_name == "softmax" and from_logits:
        raise ValueError(
            "Incoerência: a última camada tem softmax (devolve probabilidades), mas a perda usa "
            "from_logits=True (espera logits). Use from_logits=False ou tire a softmax."
        )
    if act_name == "linear" and not from_logits:
        raise ValueError(
            "Incoerência: a última camada é linear (devolve logits), mas a perda usa "
            "from_logits=False (espera probabilidades). Use from_logits=True ou ponha a softmax."
        )
    return f"ok: última camada '{act_name}' com from_logits={from_logits}"


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
