"""O doctor estima os minutos de cada lição nesta máquina pelo ensaio de referência
(``docs/ensaio/ensaio.json``) e por uma sonda de velocidade (falsos aqui, salvo no último)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from labutils import doctor
from labutils.doctor import OK, WARN
from tools.run_notebooks import lesson_notebooks, uses_gpu

REFERENCE = {
    "date": "2026-12-04 20:36 UTC",
    "machine": {"logical_cpus": 2},
    "probe": {"images_per_s": 4000.0, "device": "nenhuma"},
    "class_period_min": 15.0,
    "lessons": [
        {"notebook": "02_busca.ipynb", "gpu": False, "core_s": 600.0, "optional_s": 120.0},
        {"notebook": "05_tf.ipynb", "gpu": True, "core_s": 840.0, "optional_s": 240.0},
        {"notebook": "07_x.ipynb", "gpu": True, "core_s": 0, "optional_s": 0, "error": "x"},
    ],
}


def _rows(probe, cpus):
    return {r.item: r for r in doctor.check_lesson_times(probe, REFERENCE, cpus=cpus)}


@pytest.mark.parametrize(
    ("images_per_s", "device", "cpus", "busca", "tf"),
    [
        (4000.0, "nenhuma", 2, (10.0, 2.0), (14.0, 4.0)),  # a máquina do ensaio; 07: erro, fora
        (40000.0, "GPU:0", 2, (10.0, 2.0), (1.4, 0.4)),  # a GPU não ajuda o scikit-learn
        (40000.0, "GPU:0", 8, (2.5, 0.5), (1.4, 0.4)),  # com GPU, a busca segue as CPUs lógicas
        (16000.0, "nenhuma", 16, (2.5, 0.5), (3.5, 1.0)),  # sem GPU, tudo segue a sonda
    ],
)
def test_minutes_follow_the_probe_and_the_cpus(images_per_s, device, cpus, busca, tf):
    probe = {"images_per_s": images_per_s, "device": device}
    est = doctor.estimate_minutes(REFERENCE, probe, cpus)
    assert est == {"02_busca.ipynb": pytest.approx(busca), "05_tf.ipynb": pytest.approx(tf)}


def test_a_slower_cpu_machine_is_warned_and_told_what_to_do():
    rows = _rows({"images_per_s": 3000.0, "device": "nenhuma"}, cpus=2)
    assert rows["02_busca.ipynb"].status == OK and rows["05_tf.ipynb"].status == WARN
    rows = _rows({"images_per_s": 2000.0, "device": "nenhuma"}, cpus=2)
    assert rows["02_busca.ipynb"].status == WARN and "~20 min" in rows["02_busca.ipynb"].detail
    assert rows["05_tf.ipynb"].status == WARN and "~28 min" in rows["05_tf.ipynb"].detail
    # o remédio segue a lição: GPU para a do TensorFlow, núcleos para a do scikit-learn
    assert "GPU" in rows["05_tf.ipynb"].remedy and "núcleos" in rows["02_busca.ipynb"].remedy
    assert "0.50x" in rows["tempo das lições"].detail


def test_without_a_reference_or_a_probe_the_doctor_says_so():
    [row] = doctor.check_lesson_times({"images_per_s": 1.0}, reference={}, cpus=2)
    assert row.status == WARN and "make rehearsal" in row.remedy
    [row] = doctor.check_lesson_times({"error": "a sonda não terminou em 1 s"}, REFERENCE, cpus=2)
    assert row.status == WARN and "não terminou" in row.detail


@pytest.mark.timeout(200)
def test_the_real_probe_measures_this_machine():
    probe = doctor.speed_probe(seconds=1.0)
    assert probe.get("images_per_s", 0) > 0, probe
    assert probe["device"] == "nenhuma" or probe["device"].startswith("/physical_device:GPU")


def test_the_lessons_that_use_the_gpu_are_05_and_07_in_the_code_and_in_the_rehearsal():
    """05 e 07 usam a GPU; a 06 a esconde e, como as sem TensorFlow, é estimada pelas CPUs."""
    root = Path(__file__).resolve().parents[1]
    sniffed = {p.name[:2] for p in lesson_notebooks() if uses_gpu(nbformat.read(p, as_version=4))}
    assert sniffed == {"05", "07"}
    table = json.loads((root / "docs" / "ensaio" / "ensaio.json").read_text(encoding="utf-8"))
    assert {lesson["notebook"][:2] for lesson in table["lessons"] if lesson["gpu"]} == {"05", "07"}
