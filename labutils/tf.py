"""TensorFlow das lições 05 a 07: o pipeline ``tf.data`` do CIFAR-100, a CNN e as medidas do
treino (os gráficos e a tabela da lição 05 ficam em :mod:`labutils.plots`).

O pipeline (``normalize_images``, ``global_batch_size``, ``get_data``) e o modelo
(``create_model``) são escritos nas células ``# @save`` da lição 05, que os ensina; aqui fica a
cópia que as lições 06 e 07 usam, e um teste (``tools/lesson_code.py``) confere que é a mesma.
Os dispositivos (``setup_devices``: a CPU ou a GPU dividida para a ``MirroredStrategy``) são
assunto só da lição 05 e estão só nas células dela (o ``make bench`` os carrega de lá).

Importar este módulo importa o TensorFlow, mas não inicializa os dispositivos. Na lição 07,
``multiworker.use_legacy_keras()`` roda antes deste import, e ``tf.keras`` é então o tf-keras.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from labutils.system import check_int  # noqa: E402

# ---------------------------------------------------------------- pipeline tf.data do CIFAR-100
# Numa estratégia síncrona, o ``fit`` recebe o lote **global**, que a estratégia divide entre as
# réplicas: ``batch_per_replica × num_replicas``.

#: tamanho do buffer de embaralhamento (o do roteiro original)
SHUFFLE_BUFFER = 10_000


def normalize_images(image, label):
    """Imagem ``uint8`` (0–255) → ``float32`` em [0, 1]; o rótulo não muda. (No roteiro original,
    ``scale``: o nome mudou para não confundir com a escala das lições, ``LABUTILS_SCALE``.)"""
    image = tf.cast(image, tf.float32)
    image /= 255.0
    return image, label


def global_batch_size(batch_per_replica: int, num_replicas: int = 1) -> int:
    """Lote global = lote por réplica × número de réplicas."""
    check_int(batch_per_replica, "batch_per_replica")
    check_int(num_replicas, "num_replicas")
    return batch_per_replica * num_replicas


def get_data(
    train: tf.data.Dataset,
    test: tf.data.Dataset,
    *,
    num_replicas: int = 1,
    batch_per_replica: int | None = None,
    global_batch: int | None = None,
    shuffle_buffer: int = SHUFFLE_BUFFER,
    seed: int | None = None,
) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """Os datasets de treino e de avaliação a partir de pares ``(imagem uint8, rótulo)``.

    Lote: ``global_batch`` se dado; senão ``batch_per_replica`` (padrão:
    ``sizes().batch_per_replica``) × ``num_replicas``. Treino: ``map(normalize_images)`` →
    ``cache()`` → ``shuffle()`` → ``batch()`` → ``prefetch()``; avaliação: o mesmo, sem embaralhar.
    """
    if global_batch is None:
        if batch_per_replica is None:
            from labutils.config import sizes

            batch_per_replica = sizes().batch_per_replica
        global_batch = global_batch_size(batch_per_replica, num_replicas)
    check_int(global_batch, "global_batch")
    if global_batch % num_replicas:
        raise ValueError(
            f"O lote global ({global_batch}) deve ser múltiplo do número de réplicas "
            f"({num_replicas}), para que cada réplica receba a mesma quantidade de exemplos."
        )
    check_int(shuffle_buffer, "shuffle_buffer")
    autotune = tf.data.AUTOTUNE
    train_dataset = (
        train.map(normalize_images, num_parallel_calls=autotune)
        .cache()  # normaliza uma vez só; as épocas seguintes leem da memória
        .shuffle(shuffle_buffer, seed=seed)  # nova ordem a cada época
        .batch(global_batch)
        .prefetch(autotune)  # prepara o próximo lote enquanto o modelo treina
    )
    eval_dataset = (
        test.map(normalize_images, num_parallel_calls=autotune)
        .cache()
        .batch(global_batch)
        .prefetch(autotune)
    )
    return train_dataset, eval_dataset


def split_validation(
    train: tf.data.Dataset, num_examples: int, fraction: float = 0.1
) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """``(treino sem a validação, validação)``: a validação são os primeiros ``fraction ×
    num_examples`` exemplos do TREINO (a ordem do ``tfds.load`` é fixa: todo worker separa os
    mesmos). O teste fica para medir o modelo final uma vez só."""
    check_int(num_examples, "num_examples")
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction < 1:
        raise ValueError(f"fraction deve ser um número entre 0 e 1, recebi {fraction!r}.")
    num_val = max(1, int(num_examples * fraction))
    if num_val >= num_examples:
        raise ValueError(
            f"Com {num_examples} exemplos não sobra treino depois de separar {num_val} para a "
            "validação: use mais exemplos ou uma fração menor."
        )
    return train.skip(num_val), train.take(num_val)


# ---------------------------------------------------------------- o modelo
# ``tf.keras`` (não ``import keras``): o mesmo código dá um modelo Keras 3 e, com
# ``TF_USE_LEGACY_KERAS=1`` (lição 07), um tf-keras. Saída ``softmax`` com
# ``from_logits=False`` (o roteiro original dizia ``from_logits=True`` depois da softmax).

#: tamanho das imagens do CIFAR-100 (altura, largura, canais)
INPUT_SHAPE = (32, 32, 3)


def create_model(
    num_classes: int = 100, *, learning_rate: float = 1e-3, compile: bool = True
) -> tf.keras.Model:
    """A CNN (Conv2D 32/64/64 com pooling, Dense 64 e Dense ``num_classes``), compilada com Adam
    (``compile=False``: sem compilar). No treino distribuído, chame dentro de
    ``strategy.scope()``: as variáveis do modelo e do otimizador nascem espelhadas."""
    check_int(num_classes, "num_classes", 2)
    if (
        isinstance(learning_rate, bool)
        or not isinstance(learning_rate, int | float)
        or not (0 < learning_rate < 1)
    ):
        raise ValueError(f"learning_rate deve ser um número entre 0 e 1, recebi {learning_rate!r}.")
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=INPUT_SHAPE),
            layers.Conv2D(32, (3, 3), activation="relu"),
            layers.MaxPooling2D((2, 2)),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.MaxPooling2D((2, 2)),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(num_classes, activation="softmax"),
        ]
    )
    if compile:
        model.compile(
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=False),
            optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate),
            metrics=["accuracy"],
            # numa GPU, o Keras ligaria o XLA só no modelo fora de estratégia: o mesmo cálculo nos
            # dois, para a comparação da lição 05 (na CPU, já é assim)
            jit_compile=False,
        )
    return model


def lesson_model_path() -> Path:
    """Onde a lição 05 grava o modelo que a lição 06 lê: ``results/modelos/cifar100_cnn.keras``."""
    from labutils.config import results_dir

    return results_dir() / "modelos" / "cifar100_cnn.keras"


def save_lesson_model(model: tf.keras.Model, path: str | os.PathLike | None = None) -> Path:
    """Grava o modelo em ``path`` (padrão: :func:`lesson_model_path`) num arquivo ao lado, depois
    renomeado: nunca fica um modelo pela metade com o nome final."""
    if not callable(getattr(model, "save", None)):
        raise TypeError(f"save_lesson_model espera um modelo Keras, recebi {type(model).__name__}.")
    path = Path(path) if path is not None else lesson_model_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}-{os.getpid()}-parcial.keras")
    model.save(partial)
    os.replace(partial, path)
    return path


def check_loss_activation(model: tf.keras.Model) -> str:
    """Confere se a ativação da última camada combina com o ``from_logits`` da perda (``softmax``
    pede ``False``; linear, ``True``): uma frase de confirmação, ou ``ValueError``."""
    activation = getattr(model.layers[-1], "activation", None)
    act_name = getattr(activation, "__name__", str(activation))
    from_logits = getattr(model.loss, "from_logits", None)
    if from_logits is None:
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
    """Cronometra cada época do ``fit`` (``callbacks=[EpochTimer(imagens por época)]``). A 1ª
    inclui a compilação do grafo: :attr:`steady_images_per_second` a ignora se houve outras."""

    def __init__(self, num_examples: int):
        super().__init__()
        check_int(num_examples, "num_examples")
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
        if not self.epoch_seconds:
            raise RuntimeError("Nenhuma época medida: passe o EpochTimer em callbacks= do fit.")
        seconds = self.epoch_seconds[1:] or self.epoch_seconds
        return self.num_examples * len(seconds) / sum(seconds)


class GpuSampler:
    """Amostra a utilização das GPUs (``nvidia-smi``) a cada ``interval`` s dentro de um
    ``with``; sem ``nvidia-smi`` (só CPU), fica vazio e :meth:`summary` diz isso."""

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
        if not self.samples:
            return "Sem medição de GPU: nvidia-smi não está disponível nesta máquina (só CPU)."
        parts = [f"GPU {i}: {u:.0f}%" for i, u in self.mean_utilization().items()]
        return "Utilização média durante o treino: " + ", ".join(parts)
