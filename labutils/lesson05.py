"""O código das células ``# @save`` de ``notebooks/05_tensorflow_mirrored.ipynb``, na ordem da lição.

Gerado por ``make lesson-code`` (``tools/lesson_code.py``): não edite aqui; edite a lição e gere de novo.
"""

# @save
import tensorflow as tf

from labutils.system import check_int
from labutils.tf import Devices, explain_late_split, use_gpus


def setup_devices(logical_cpus: int = 2) -> Devices:
    """Prepara os dispositivos da ``MirroredStrategy()``: uma réplica por GPU (uma GPU só vira
    ``logical_cpus`` GPUs lógicas) ou, sem GPU, a CPU dividida em ``logical_cpus``."""
    check_int(logical_cpus, "logical_cpus")
    gpus = tf.config.list_physical_devices("GPU")  # os dispositivos físicos
    if gpus:
        return use_gpus(gpus, logical_cpus)
    cpu = tf.config.list_physical_devices("CPU")[0]
    with explain_late_split("CPU", logical_cpus):  # só antes de o TF iniciar
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus
        )
    logical = tf.config.list_logical_devices("CPU")  # os dispositivos da estratégia
    return Devices("cpu", (cpu.name,), tuple(d.name for d in logical))


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


# @save
def replica_gradients(model, loss_fn, images, labels):
    """Os gradientes de ``loss_fn`` no lote (numa réplica, na parte dela do lote)."""
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    return tape.gradient(loss, model.trainable_variables)


def mirrored_gradients(strategy, model, loss_fn, images, labels):
    """Os gradientes de um lote global com ``strategy``: cada réplica calcula os da sua parte
    (``strategy.run``), e a soma os junta, como o ``fit`` faz."""
    batch = tf.data.Dataset.from_tensors((images, labels))
    x, y = next(iter(strategy.experimental_distribute_dataset(batch)))  # uma parte por réplica

    @tf.function
    def per_replica():
        return strategy.run(replica_gradients, args=(model, loss_fn, x, y))

    return [strategy.reduce("SUM", g, axis=None) for g in per_replica()]
