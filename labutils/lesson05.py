"""O código das células ``# @save`` de ``notebooks/05_tensorflow_mirrored.ipynb``, na ordem da lição.

Gerado por ``make lesson-code`` (``tools/lesson_code.py``): não edite aqui; edite a lição e gere de novo.
"""

# @save
from dataclasses import dataclass

import tensorflow as tf

from labutils.system import check_int

#: memória de cada GPU lógica quando uma GPU só é dividida (a rede desta lição usa bem menos)
LOGICAL_GPU_MEMORY_MB = 1024


class DevicesAlreadyInitializedError(RuntimeError):
    """Os dispositivos do TensorFlow já foram inicializados com outra configuração."""


@dataclass(frozen=True)
class Devices:
    """O que ``setup_devices`` encontrou: ``kind`` (``"gpu"`` ou ``"cpu"``), os dispositivos
    físicos e os lógicos que a ``MirroredStrategy()`` vai usar."""

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


def split_device(device, kind: str, count: int, config) -> tuple[str, ...]:
    """Divide ``device`` em ``count`` dispositivos lógicos (nada muda se já está assim)."""
    try:
        tf.config.set_logical_device_configuration(device, [config] * count)
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
    return tuple(d.name for d in tf.config.list_logical_devices(kind))


def setup_devices(logical_cpus: int = 2) -> Devices:
    """Prepara os dispositivos para a ``MirroredStrategy``: com várias GPUs, uma réplica por GPU
    (memória sob demanda); com uma, ela dividida em ``logical_cpus`` GPUs lógicas; sem GPU, a CPU
    dividida em ``logical_cpus``. Pode ser chamada de novo com a mesma configuração."""
    check_int(logical_cpus, "logical_cpus")
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) == 1 and logical_cpus > 1:
        memory = tf.config.LogicalDeviceConfiguration(memory_limit=LOGICAL_GPU_MEMORY_MB)
        return Devices("gpu", (gpus[0].name,), split_device(gpus[0], "GPU", logical_cpus, memory))
    if gpus:
        for gpu in gpus:
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError:  # já inicializado: mantém a configuração em vigor
                pass
        logical = tf.config.list_logical_devices("GPU")
        return Devices("gpu", tuple(g.name for g in gpus), tuple(d.name for d in logical))
    cpu = tf.config.list_physical_devices("CPU")[0]
    config = tf.config.LogicalDeviceConfiguration()
    return Devices("cpu", (cpu.name,), split_device(cpu, "CPU", logical_cpus, config))


# @save
import tensorflow as tf

#: tamanho do buffer de embaralhamento
SHUFFLE_BUFFER = 10_000


def normalize_images(image, label):
    """Imagem ``uint8`` (0–255) → ``float32`` em [0, 1]; o rótulo não muda."""
    image = tf.cast(image, tf.float32)
    image /= 255.0
    return image, label


def global_batch_size(batch_per_replica: int, num_replicas: int = 1) -> int:
    """Lote global = lote por réplica × número de réplicas."""
    check_int(batch_per_replica, "batch_per_replica")
    check_int(num_replicas, "num_replicas")
    return batch_per_replica * num_replicas


# @save
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


# @save
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
