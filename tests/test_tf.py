"""Lição 05: dispositivos, pipeline tf.data, modelo, medições e gráficos (dados minúsculos); num
processo novo, o que precisa do TensorFlow ainda não inicializado. (O modelo e o pipeline no
tf-keras da lição 07 treinam nos processos da verificação: ``test_exercise_mistakes.py``.)"""

from __future__ import annotations

import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from processes import last_json, run_python

from tools.lesson_code import load

#: as células ``# @save`` da lição 05 (os dispositivos só existem lá)
LESSON_05 = load("05_tensorflow_mirrored")
setup_devices = LESSON_05.setup_devices

from labutils.tf import DevicesAlreadyInitializedError  # noqa: E402

try:  # outros testes deste processo podem já ter inicializado o TensorFlow
    setup_devices(2)
except DevicesAlreadyInitializedError:
    pass

import tensorflow as tf  # noqa: E402

from labutils.lesson05 import create_model, get_data, normalize_images  # noqa: E402
from labutils.plots import Run, plot_training, summary_table  # noqa: E402
from labutils.tf import (  # noqa: E402
    LOGICAL_GPU_MEMORY_MB,
    EpochTimer,
    GpuSampler,
    check_loss_activation,
    split_validation,
)

SOFTMAX_WARNING = ".*Softmax activation.*"


def tiny_pairs(n: int, num_classes: int = 100, seed: int = 0) -> tf.data.Dataset:
    """``n`` pares (imagem uint8 32×32×3, rótulo int64), como os do tfds."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, num_classes, size=n).astype(np.int64)
    return tf.data.Dataset.from_tensor_slices((images, labels))


def test_get_data_batches_with_global_batch_and_normalizes():
    train, test = get_data(
        tiny_pairs(10), tiny_pairs(6, seed=1), num_replicas=2, batch_per_replica=2
    )
    train_batches = [x.shape[0] for x, _ in train]
    eval_batches = [x.shape[0] for x, _ in test]
    assert train_batches == [4, 4, 2]  # lote global 2 × 2 = 4; o resto fica no último
    assert eval_batches == [4, 2]
    x, y = next(iter(train))
    assert x.dtype == tf.float32 and y.dtype == tf.int64
    assert 0.0 <= float(tf.reduce_min(x)) and float(tf.reduce_max(x)) <= 1.0
    image, label = normalize_images(tf.constant([[[0, 128, 255]]], tf.uint8), tf.constant(7))
    np.testing.assert_allclose(image.numpy().ravel(), [0.0, 128 / 255, 1.0], rtol=1e-6)
    assert int(label) == 7


def test_get_data_explicit_global_batch_and_default_from_sizes():
    train, _ = get_data(tiny_pairs(10), tiny_pairs(2), global_batch=5)
    assert [x.shape[0] for x, _ in train] == [5, 5]
    from labutils import sizes

    train, _ = get_data(tiny_pairs(200), tiny_pairs(2))
    assert next(iter(train))[0].shape[0] == sizes().batch_per_replica
    with pytest.raises(ValueError, match="shuffle_buffer"):
        get_data(tiny_pairs(2), tiny_pairs(2), shuffle_buffer=0)
    with pytest.raises(ValueError, match="global_batch"):
        get_data(tiny_pairs(2), tiny_pairs(2), global_batch=0)
    with pytest.raises(ValueError, match="múltiplo"):
        get_data(tiny_pairs(2), tiny_pairs(2), global_batch=5, num_replicas=2)


def test_get_data_shuffles_train_every_epoch_but_not_eval():
    train, test = get_data(tiny_pairs(64), tiny_pairs(64), batch_per_replica=64, seed=3)
    epoch1, epoch2 = (next(iter(train))[1].numpy() for _ in range(2))
    assert sorted(epoch1) == sorted(epoch2) and not np.array_equal(epoch1, epoch2)
    original = np.array([int(y) for _, y in tiny_pairs(64)])
    np.testing.assert_array_equal(next(iter(test))[1].numpy(), original)


def test_split_validation_carves_disjoint_validation_from_train():
    ds = tf.data.Dataset.from_tensor_slices((tf.zeros((20, 1)), tf.range(20, dtype=tf.int64)))
    train, val = split_validation(ds, 20, fraction=0.25)
    train_ids = [int(y) for _, y in train]
    val_ids = [int(y) for _, y in val]
    assert val_ids == [0, 1, 2, 3, 4] and train_ids == list(range(5, 20))


def test_the_model_trains_without_xla_with_or_without_a_strategy(monkeypatch):
    """Numa GPU (simulada aqui), o Keras ligaria o XLA sozinho só no modelo fora de estratégia;
    o centralizado e o espelhado da lição 05 fariam cálculos diferentes."""
    real = tf.config.list_physical_devices
    fake = [SimpleNamespace(device_type="CPU"), SimpleNamespace(device_type="GPU")]
    monkeypatch.setattr(
        tf.config, "list_physical_devices", lambda kind=None: fake if kind is None else real(kind)
    )
    auto = create_model(compile=False)
    auto.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
    assert auto.jit_compile  # o controle: sem dizer nada, o Keras ligaria o XLA
    assert create_model().jit_compile is False


def test_setup_devices_uses_one_replica_per_gpu(monkeypatch):
    """Com GPUs (simuladas aqui), nada é dividido: memória sob demanda e uma réplica por GPU."""
    gpus = [SimpleNamespace(name=f"/physical_device:GPU:{i}") for i in range(2)]
    growth = []
    monkeypatch.setattr(
        tf.config, "list_physical_devices", lambda kind=None: gpus if kind == "GPU" else []
    )
    monkeypatch.setattr(
        tf.config,
        "list_logical_devices",
        lambda kind=None: [SimpleNamespace(name=f"/device:GPU:{i}") for i in range(2)],
    )
    monkeypatch.setattr(
        tf.config.experimental, "set_memory_growth", lambda gpu, on: growth.append((gpu.name, on))
    )
    monkeypatch.setattr(
        tf.config,
        "set_logical_device_configuration",
        lambda *a: pytest.fail("não deveria dividir dispositivos quando há GPU"),
    )
    devices = setup_devices(2)
    assert devices.kind == "gpu" and devices.num_replicas == 2
    assert growth == [(g.name, True) for g in gpus]
    assert "2 GPU(s)" in devices.describe()


def test_setup_devices_splits_a_single_gpu_in_two(monkeypatch):
    """Com uma GPU só (simulada), a lição 05 ainda mostra duas réplicas: 2 GPUs lógicas."""
    gpu = SimpleNamespace(name="/physical_device:GPU:0")
    split = []
    monkeypatch.setattr(
        tf.config, "list_physical_devices", lambda kind=None: [gpu] if kind == "GPU" else []
    )
    monkeypatch.setattr(
        tf.config,
        "list_logical_devices",
        lambda kind=None: [SimpleNamespace(name=f"/device:GPU:{i}") for i in range(len(split[-1]))],
    )
    monkeypatch.setattr(
        tf.config, "set_logical_device_configuration", lambda dev_, cfg: split.append(cfg)
    )
    devices = setup_devices(2)
    assert devices.kind == "gpu" and devices.num_replicas == 2
    assert [c.memory_limit for c in split[-1]] == [LOGICAL_GPU_MEMORY_MB] * 2
    assert "1 GPU física dividida em 2 GPUs lógicas" in devices.describe()


def test_summed_gradients_are_the_one_device_step_only_with_the_loss_scaled(monkeypatch):
    """A célula da lição 05: os gradientes de 2 réplicas somados são os de um dispositivo com o
    lote global inteiro, porque a perda de cada réplica é dividida pelo lote global (o Keras o faz;
    num laço próprio, ``compute_average_loss``). Sem essa divisão, a comparação fica vermelha."""
    cpus = [d.name for d in tf.config.list_logical_devices("CPU")]
    assert len(cpus) >= 2, f"este processo já tinha iniciado o TF com {cpus}"
    strategy = tf.distribute.MirroredStrategy(cpus[:2])
    rng = np.random.default_rng(0)
    images = tf.constant(rng.random((16, 32, 32, 3), dtype=np.float32))
    labels = tf.constant(rng.integers(0, 10, size=16))
    one = create_model(num_classes=10)
    with strategy.scope():
        two = create_model(num_classes=10)
    two.set_weights(one.get_weights())
    expected = LESSON_05.replica_gradients(one, one.loss, images, labels)

    def same_step(loss_fn) -> bool:  # o assert da célula da lição
        summed = LESSON_05.mirrored_gradients(strategy, two, loss_fn, images, labels)
        pairs = zip(expected, summed, strict=True)
        return all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in pairs)

    per_example = tf.keras.losses.sparse_categorical_crossentropy
    assert same_step(two.loss)  # o Keras escala sozinho
    assert same_step(
        lambda y, p: tf.nn.compute_average_loss(per_example(y, p), global_batch_size=16)
    )
    # um laço próprio sem compute_average_loss: cada réplica tira a média da sua metade
    assert not same_step(lambda y, p: tf.reduce_mean(per_example(y, p)))
    from keras.src.losses import loss as keras_loss

    monkeypatch.setattr(keras_loss, "scale_loss_for_distribution", lambda value: value)
    assert not same_step(two.loss)  # o Keras sem a sua escala


def test_create_model_is_the_seed_cnn_with_consistent_loss():
    model = create_model()
    assert model.output_shape == (None, 100)
    assert check_loss_activation(model).startswith("ok")
    assert create_model(num_classes=10).output_shape == (None, 10)
    with pytest.raises(ValueError, match="num_classes"):
        create_model(num_classes=1)


@pytest.mark.parametrize(
    ("softmax", "from_logits", "says"),
    [(True, True, "Incoerência: .*softmax"), (False, False, "Incoerência: .*linear")],
    ids=["o par do roteiro: softmax e from_logits=True", "saída linear e from_logits=False"],
)
def test_check_loss_activation_catches_both_incoherent_pairs(softmax, from_logits, says):
    head = tf.keras.layers.Dense(3, activation="softmax" if softmax else None)
    model = tf.keras.Sequential([tf.keras.Input((4,)), head])
    loss = tf.keras.losses.SparseCategoricalCrossentropy
    model.compile(loss=loss(from_logits=from_logits), optimizer="adam")
    with pytest.raises(ValueError, match=says):
        check_loss_activation(model)
    model.compile(loss=loss(from_logits=not from_logits), optimizer="adam")
    assert check_loss_activation(model).startswith("ok")


def test_the_model_trains_without_softmax_warning_and_the_epoch_timer_measures_each_epoch():
    train, _ = get_data(tiny_pairs(32, num_classes=10), tiny_pairs(2), batch_per_replica=16)
    model = create_model(num_classes=10)
    timer = EpochTimer(32)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=SOFTMAX_WARNING)
        history = model.fit(train, epochs=3, verbose=0, callbacks=[timer])
    assert np.isfinite(history.history["loss"]).all()
    probs = model.predict(next(iter(train))[0], verbose=0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-4)  # a saída é softmax
    assert len(timer.epoch_seconds) == 3 and all(s > 0 for s in timer.epoch_seconds)
    np.testing.assert_allclose(timer.images_per_second, [32 / s for s in timer.epoch_seconds])
    later = timer.epoch_seconds[1:]
    assert timer.steady_images_per_second == pytest.approx(64 / sum(later))
    model.fit(train, epochs=1, verbose=0, callbacks=[timer])
    assert len(timer.epoch_seconds) == 1  # um novo fit recomeça a contagem


def test_gpu_sampler_without_nvidia_smi_is_empty_and_says_so(monkeypatch):
    monkeypatch.setenv("PATH", "/nao/existe")
    with GpuSampler(interval=0.01) as gpu:
        pass
    assert gpu.samples == [] and gpu.mean_utilization() == {}
    assert "nvidia-smi" in gpu.summary()


def test_gpu_sampler_averages_each_gpu_while_in_the_block(monkeypatch):
    class Done:
        stdout = "0, 40\n1, 60\n"

    monkeypatch.setattr("subprocess.run", lambda *a, **k: Done())
    with GpuSampler(interval=0.01) as gpu:
        time.sleep(0.1)
    assert len(gpu.samples) >= 4 and gpu.mean_utilization() == {0: 40.0, 1: 60.0}
    assert "GPU 1: 60%" in gpu.summary()


class FakeTimer:
    def __init__(self, seconds, n=100):
        self.epoch_seconds = seconds
        self.images_per_second = [n / s for s in seconds]
        self.steady_images_per_second = n * len(seconds[1:]) / sum(seconds[1:])


def test_plot_training_and_summary_table_show_both_approaches():
    import matplotlib

    matplotlib.use("Agg")
    runs = {
        "centralizado": Run(
            {"loss": [3.0, 2.0], "accuracy": [0.1, 0.2]}, FakeTimer([2.0, 1.0]), 0.3, 1, 64
        ),
        "espelhado": Run(
            {"loss": [3.1, 2.2], "accuracy": [0.1, 0.15]}, FakeTimer([3.0, 2.0]), 0.25, 2, 128
        ),
    }
    fig = plot_training(runs)
    assert len(fig.axes) == 4
    for ax in fig.axes:
        assert [line.get_label() for line in ax.get_lines()] == ["centralizado", "espelhado"]
    np.testing.assert_allclose(fig.axes[0].get_lines()[1].get_ydata(), [3.1, 2.2])
    table = summary_table(runs)
    assert table.loc["espelhado", "lote global"] == 128
    assert table.loc["centralizado", "imagens/s (demais)"] == pytest.approx(100.0)
    assert table.loc["espelhado", "s/época (demais)"] == pytest.approx(2.0)


def test_cpu_split_gives_mirrored_strategy_two_replicas_and_clear_error_after_init():
    done = run_python(
        """
        import json, os
        from tools.lesson_code import load
        lesson = load("05_tensorflow_mirrored")
        devices = lesson.setup_devices(2)
        import tensorflow as tf
        from labutils.lesson05 import create_model
        from labutils.tf import DevicesAlreadyInitializedError
        strategy = tf.distribute.MirroredStrategy()
        with strategy.scope():
            model = create_model(num_classes=10)
        x = tf.random.uniform((16, 32, 32, 3)); y = tf.random.uniform((16,), 0, 10, tf.int64)
        loss = model.fit(x, y, batch_size=8, epochs=1, verbose=0).history["loss"][0]
        again = lesson.setup_devices(2).num_replicas  # de novo no mesmo processo: sem erro
        try:
            lesson.setup_devices(3)
            message = None
        except DevicesAlreadyInitializedError as err:
            message = str(err)
        print(json.dumps({"kind": devices.kind, "replicas": strategy.num_replicas_in_sync,
                          "devices": devices.num_replicas, "again": again, "loss": loss,
                          "message": message}))
        """,
        timeout=180,
        env={"CUDA_VISIBLE_DEVICES": ""},
    )
    result = last_json(done)
    assert result["kind"] == "cpu"
    assert result["replicas"] == result["devices"] == result["again"] == 2
    assert np.isfinite(result["loss"])
    assert "reinicie o kernel" in result["message"]
