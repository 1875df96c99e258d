"""Inferência em lote (lição 06): as peças de cada degrau, a gravação em Parquet e os pedidos
impossíveis, com um modelo sem treino. Os degraus com Ray, a própria lição os confere (nbval),
inclusive que o Ray Data repartiu os lotes entre os atores (a leitura em vários blocos)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import ray

from labutils import inference
from labutils.lesson05 import create_model
from labutils.tf import save_lesson_model
from tools.lesson_code import load

#: classificar um lote: escrito numa célula # @save da lição 06
LESSON_06 = load("06_inferencia_em_lote")
predict_labels = LESSON_06.predict_labels

N_IMAGES = 96
BATCH = 32


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(N_IMAGES, 32, 32, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def model():
    return create_model()


def test_check_same_labels_goes_red_on_any_difference():
    ref = np.array([3, 1, 4, 1, 5]), np.array([0.5, 0.2, 0.3, 0.9, 0.4], np.float32)
    inference.check_same_labels(ref, (ref[0].copy(), ref[1] * (1 + 1e-6)), "igual")
    wrong = ref[0].copy()
    wrong[2] = 9
    with pytest.raises(AssertionError, match=r"x: 1 de 5 previsões diferem.*\[2\]"):
        inference.check_same_labels(ref, (wrong, ref[1]), "x")
    swapped = ref[1][[0, 1, 2, 4, 3]]  # mesma classe, outra imagem: só a confiança denuncia
    with pytest.raises(AssertionError, match=r"2 de 5 previsões diferem.*\[3, 4\]"):
        inference.check_same_labels((np.ones(5), ref[1]), (np.ones(5), swapped), "troca")
    with pytest.raises(AssertionError, match="4 previsões, esperava 5"):
        inference.check_same_labels(ref, (ref[0][:4], ref[1][:4]), "curto")


def test_save_and_bytes_roundtrip_give_the_same_labels(tmp_path, model, images):
    path = save_lesson_model(model, tmp_path / "m.keras")
    assert path.exists() and not list(tmp_path.glob(".*parcial*"))
    again = LESSON_06.model_from_bytes(path.read_bytes())
    expected = predict_labels(model, images, BATCH)
    inference.check_same_labels(expected, predict_labels(again, images, BATCH), "disco")
    copy = LESSON_06.model_from_bytes(LESSON_06.model_bytes(model))
    inference.check_same_labels(expected, predict_labels(copy, images, 7), "bytes")


def test_load_or_train_uses_lesson_05_model_or_trains_and_says_so(tmp_path, model, monkeypatch):
    monkeypatch.setenv("LABUTILS_RESULTS_DIR", str(tmp_path / "salvo"))
    save_lesson_model(model)  # onde a lição 05 grava, sem dizer o caminho
    _, origin = inference.load_or_train("smoke")
    assert "salvo pela lição 05" in origin
    missing = tmp_path / "vazio" / "cifar100_cnn.keras"
    trained, origin = inference.load_or_train("smoke", path=missing)
    assert "não existe" in origin and "treinei" in origin
    assert (missing.parent / "cifar100_cnn_rapido_smoke.keras").exists()
    _, origin = inference.load_or_train("smoke", path=missing)
    assert "treino rápido anterior" in origin


def test_predictor_class_gives_model_predict_labels(tmp_path, model, images):
    """A classe dos atores e do Ray Data, chamada sem Ray, com lotes de Parquet."""
    import pyarrow.parquet as pq

    expected = predict_labels(model, images, BATCH)
    predictor = LESSON_06.BatchPredictor(LESSON_06.model_bytes(model))
    inference.check_same_labels(expected, predictor.predict(images), "Predictor.predict")
    table = pq.read_table(inference.write_image_files(images, tmp_path, files=2)).sort_by("id")
    assert np.array_equal(inference.decode(table["image"].to_pylist()), images)  # ida e volta
    out = predictor({"id": table["id"].to_numpy(), "image": table["image"].to_pylist()})
    inference.check_same_labels(expected, (out["label"], out["confidence"]), "__call__")
    assert predictor.info()["carga_s"] >= 0


def test_load_images_makes_a_stream_of_the_configured_size():
    imgs = inference.load_images("smoke")
    size = inference.sizes("smoke")
    assert imgs.stream.shape == (size.inference_images, 32, 32, 3)
    assert imgs.stream.dtype == np.uint8 and imgs.test.shape[0] == size.cifar_test_examples
    assert np.array_equal(imgs.stream[: len(imgs.test)], imgs.test)
    assert "ALEATÓRIAS" in imgs.source


def test_pool_too_big_fails_fast_in_portuguese(local_ray):
    assert inference.plan_pool(None) == 2
    assert inference.plan_pool(2, 0.5, reserve=1.0) == 2
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="esperariam para sempre"):
        inference.plan_pool(3)
    with pytest.raises(RuntimeError, match="mais 1 para ler e gravar"):
        inference.plan_pool(2, 1.0, reserve=1.0)
    assert time.monotonic() - start < 5, "um pedido impossível deve falhar na hora"
    assert inference.data_actor_cpus(2) == 0.5


def test_the_whole_pool_waits_for_cpus_that_are_about_to_be_freed(local_ray):
    """Na escala full (``inference_actors=None``), o pool é o cluster inteiro: uma CPU ainda presa
    pela tarefa anterior não pode encolher o pool de 2 para 1 ator."""

    @ray.remote(num_cpus=1)
    def holds_a_cpu():
        time.sleep(1.5)

    ref = holds_a_cpu.remote()
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) > 1:  # a tarefa já segura a sua CPU
        assert time.monotonic() < deadline, "a tarefa não começou"
        time.sleep(0.05)
    assert inference.plan_pool(None) == 2
    ray.get(ref)


@pytest.fixture
def fake_machine(monkeypatch):
    """Um Ray de mentira de ``state["total"]`` CPUs; ``state["free"]`` diz as livres a cada
    leitura (uma lista: a próxima leitura tira o primeiro valor; o último fica)."""
    state = {"total": 2.0, "free": [2.0]}

    def available():
        free = state["free"].pop(0) if len(state["free"]) > 1 else state["free"][0]
        return {"CPU": free}

    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": state["total"]})
    monkeypatch.setattr(ray, "available_resources", available)
    return state


@pytest.mark.parametrize(
    ("cpus", "whole_pool", "data_actors", "data_cpus"),
    [(1, 1, None, 0.05), (8, 8, 2, 1.0), (16, 16, 2, 1.0)],
)
def test_pool_plans_follow_the_cpus_ray_declares(fake_machine, cpus, whole_pool, data_actors,
                                                 data_cpus):  # fmt: skip
    """O pool e os atores do Ray Data a 1, 8 e 16 CPUs (o LABUTILS_CPUS da matriz): o pool
    inteiro é o que o Ray declara; o que não cabe falha na hora, não espera para sempre."""
    fake_machine.update(total=float(cpus), free=[float(cpus)])
    assert inference.plan_pool(None) == whole_pool
    assert inference.data_actor_cpus(2) == data_cpus
    start = time.monotonic()
    if data_actors is None:  # 1 CPU: 2 atores não cabem, nem 1 ator com 1 CPU para ler
        with pytest.raises(RuntimeError, match="esperariam para sempre"):
            inference.plan_pool(2)
        with pytest.raises(RuntimeError, match="esperariam para sempre"):
            inference.plan_pool(1, data_cpus, reserve=inference.IO_CPUS)
    else:
        assert inference.plan_pool(2, data_cpus, reserve=inference.IO_CPUS) == data_actors
        with pytest.raises(RuntimeError, match="esperariam para sempre"):
            inference.plan_pool(cpus + 1)
    assert time.monotonic() - start < 2, "um pedido impossível deve falhar na hora"


def test_the_pool_waits_for_cpus_being_freed_then_takes_what_is_free(fake_machine):
    fake_machine.update(total=8.0, free=[3.0, 5.0, 8.0])  # CPUs voltando aos poucos
    assert inference.plan_pool(None) == 8
    fake_machine.update(free=[6.0, 6.0, 7.0])  # um pedido que cabe, assim que couber
    assert inference.plan_pool(7) == 7
