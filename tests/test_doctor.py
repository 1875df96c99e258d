"""Testes do diagnóstico (labutils.doctor): cada verificação com o caso de falha simulado."""

from __future__ import annotations

import contextlib
import socket
import time
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from labutils import data, doctor, system
from labutils.doctor import FAIL, OK, WARN, Row


def test_python_wrong_version_blocks():
    row = doctor.check_python(SpecifierSet(">=3.11,<3.12"), (3, 10, 4))
    assert row.status == FAIL and "3.10.4" in row.detail and "3.11" in row.remedy
    assert doctor.check_python(SpecifierSet(">=3.11,<3.12"), (3, 11, 9)).status == OK


def test_package_pinned_ok_other_version_warns_missing_blocks():
    row = doctor.check_package(Requirement(f"pytest=={pytest.__version__}"))
    assert row == Row(OK, "pytest", pytest.__version__)
    row = doctor.check_package(Requirement("pytest==1.0.0"))
    assert row.status == WARN and pytest.__version__ in row.detail and "==1.0.0" in row.detail
    row = doctor.check_package(Requirement("pacote-que-nao-existe==1.0"))
    assert row.status == FAIL and "não instalado" in row.detail and row.remedy


GOOD_PROBE = {
    "tf": "2.21.0",
    "gpus": [],
    "logical_cpus": 2,
    "tf_keras": "2.21.0",
    "legacy_keras": True,
}


def test_tensorflow_on_cpu_with_an_unseen_gpu_or_without_the_cpu_split():
    row = doctor.check_tensorflow(GOOD_PROBE, gpu_on_machine=False)
    assert row.status == OK and "GPUs: 0" in row.detail and "2 dispositivos" in row.detail
    assert doctor.check_tensorflow(GOOD_PROBE, gpu_on_machine=True).status == WARN
    seen = doctor.check_tensorflow({**GOOD_PROBE, "gpus": ["GPU:0"]}, gpu_on_machine=True)
    assert seen.status == OK and "GPUs: 1" in seen.detail
    no_split = {k: v for k, v in GOOD_PROBE.items() if k != "logical_cpus"}
    no_split["split_error"] = "RuntimeError: Virtual devices cannot be modified"
    assert doctor.check_tensorflow(no_split, gpu_on_machine=False).status == FAIL


def test_tf_keras_missing_or_inactive_blocks():
    assert doctor.check_tf_keras(GOOD_PROBE).status == OK
    missing = {**GOOD_PROBE, "tf_keras_error": "ModuleNotFoundError: No module named 'tf_keras'"}
    assert doctor.check_tf_keras(missing).status == FAIL
    inactive = {**GOOD_PROBE, "legacy_keras": False}
    assert doctor.check_tf_keras(inactive).status == FAIL
    broken_tf = {"error": "import tensorflow falhou"}
    assert doctor.check_tensorflow(broken_tf).status == FAIL
    assert doctor.check_tf_keras(broken_tf).status == FAIL


def test_ray_without_a_dashboard_dependency_blocks_in_one_row(monkeypatch):
    """Uma distribuição do extra ``ray[default]`` (de ``metadata.requires("ray")``) falta: a linha
    do pacote ``ray`` acusa, com o pip install fixado, e só ela (a linha "Ray" é o ``import``)."""
    real_requires = metadata.requires

    def requires(name):
        extra = ['pacote-fantasma-do-painel>=1; extra == "default"']
        return (real_requires(name) or []) + extra if name == "ray" else real_requires(name)

    monkeypatch.setattr(metadata, "requires", requires)
    ray_pin = doctor.pinned("ray")
    row = doctor.check_package(ray_pin)
    assert row.status == FAIL and "pacote-fantasma-do-painel" in row.detail
    assert f"{ray_pin.specifier}'" in row.remedy and "ray[" in row.remedy
    assert doctor.check_ray().status == OK


def test_install_commands_are_built_from_the_pins():
    ray_pin, tf_pin = doctor.pinned("ray"), doctor.pinned("tensorflow")
    assert doctor.pip_install("ray") == (
        f"pip install 'ray[{','.join(sorted(ray_pin.extras))}]{ray_pin.specifier}'"
    )
    cuda = doctor.check_tensorflow(GOOD_PROBE, gpu_on_machine=True).remedy
    assert f"tensorflow[and-cuda]{tf_pin.specifier}" in cuda
    missing = {**GOOD_PROBE, "tf_keras_error": "ModuleNotFoundError"}
    assert str(doctor.pinned("tf-keras").specifier) in doctor.check_tf_keras(missing).remedy
    with pytest.raises(ValueError, match="não está fixado"):
        doctor.pinned("pacote-sem-pino")


@pytest.fixture
def healthy(monkeypatch):
    """O diagnóstico sem a sonda do TensorFlow nem as portas desta máquina (que variam)."""
    monkeypatch.setenv("LABUTILS_SCALE", "smoke")
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setattr(doctor, "tf_probe", lambda: dict(GOOD_PROBE))
    monkeypatch.setattr(doctor, "check_ports", lambda: [Row(OK, "portas", "livres")])


def test_cli_exits_zero_unless_something_blocks_and_warns_with_strict(healthy, monkeypatch, capsys):
    assert doctor.main(["--offline", "--no-times"]) == 0
    assert "pronto" in capsys.readouterr().out.lower()
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # um aviso: só o --strict dá código 1
    assert doctor.main(["--offline", "--no-times"]) == 0
    assert doctor.main(["--offline", "--strict", "--no-times"]) == 1
    assert "⚠️ Ray: autenticação" in capsys.readouterr().out
    monkeypatch.setattr(doctor, "tf_probe", lambda: {"error": "sem TensorFlow"})  # bloqueia
    assert doctor.main(["--offline", "--no-times"]) == 1
    assert "❌ TensorFlow" in capsys.readouterr().out


@contextlib.contextmanager
def listening_and_closed_port():
    """Duas portas de 127.0.0.1: uma com um servidor escutando, outra livre (sem ninguém)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        yield server.getsockname()[1], free


def test_port_taken_warns_and_free_port_is_ok_and_an_unreachable_host_warns():
    with listening_and_closed_port() as (taken, free):
        rows = doctor.check_ports({"cabeça": taken, "painel": free})
        hosts, reachable = doctor.check_hosts(
            {"A": ("127.0.0.1", taken), "B": ("127.0.0.1", free)}, timeout=1
        )
    assert [r.status for r in rows] == [WARN, OK]
    assert str(taken) in rows[0].item and f":{taken}" in rows[0].remedy
    assert reachable == {"A": True, "B": False}
    assert [r.status for r in hosts] == [OK, WARN] and "make data" in hosts[1].remedy


def test_invalid_scale_blocks(monkeypatch):
    monkeypatch.setenv("LABUTILS_SCALE", "enorme")
    row = doctor.check_scale()
    assert row.status == FAIL and "enorme" in row.detail
    monkeypatch.setenv("LABUTILS_SCALE", "smoke")
    assert doctor.check_scale().status == OK


@pytest.fixture
def empty_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("scale", "synthetic", "server_up", "status", "says"),
    [
        ("full", "", False, FAIL, "make data"),  # sem dados e sem rede: a aula não roda
        ("full", "", True, WARN, "make data"),  # será baixado na primeira lição
        ("smoke", "", False, OK, "smoke"),  # a escala smoke usa dados locais
        ("full", "1", False, WARN, "SINTÉTICOS"),  # o ensaio não é bloqueado
    ],
)
def test_missing_data(empty_data_dir, monkeypatch, scale, synthetic, server_up, status, says):
    monkeypatch.setenv("LABUTILS_SCALE", scale)
    monkeypatch.setenv("LABUTILS_SYNTHETIC_DATA", synthetic)
    rows = doctor.check_datasets({"California Housing": server_up, "CIFAR-100": server_up})
    assert [r.status for r in rows] == [status, status]
    assert all(says in r.detail + r.remedy for r in rows), rows


def test_data_present_is_ok(empty_data_dir, monkeypatch):
    monkeypatch.setenv("LABUTILS_SCALE", "full")
    (data.housing_home()).mkdir(parents=True)
    (data.housing_home() / data.HOUSING_FILE).write_bytes(b"x")
    (empty_data_dir / "cifar100" / "3.0.2").mkdir(parents=True)
    (empty_data_dir / "cifar100" / "3.0.2" / "dataset_info.json").write_text("{}")
    rows = doctor.check_datasets({"California Housing": False, "CIFAR-100": False})
    assert [r.status for r in rows] == [OK, OK]


def test_hosts_are_checked_in_parallel_with_the_timeout(monkeypatch):
    calls = []

    def slow(host, port, timeout):
        calls.append(timeout)
        time.sleep(timeout)
        return OSError("sem resposta")

    monkeypatch.setattr(system, "reachable", slow)
    t0 = time.monotonic()
    _, reachable = doctor.check_hosts({h: (f"{h}.invalid", 443) for h in "ABC"}, 0.5)
    assert time.monotonic() - t0 < 1.4  # 3 × 0,5 s em série daria 1,5 s
    assert calls == [0.5, 0.5, 0.5] and not any(reachable.values())


def test_single_cpu_warns_and_a_simulated_shape_is_said(monkeypatch):
    monkeypatch.delenv("LABUTILS_CPUS", raising=False)
    monkeypatch.delenv("LABUTILS_OBJECT_STORE_MB", raising=False)
    assert [r.status for r in doctor.check_cpus(1)] == [WARN]
    assert [r.status for r in doctor.check_cpus(2)] == [OK]
    monkeypatch.setenv("LABUTILS_CPUS", "8")
    simulated, real = doctor.check_cpus(2)
    assert "simulando 8 CPUs" in simulated.detail and real.status == OK


def test_require_ready_raises_only_on_failures():
    ok, warn, fail = Row(OK, "a", ""), Row(WARN, "b", ""), Row(FAIL, "c", "", "faça X")
    with pytest.raises(doctor.EnvironmentNotReady, match="faça X"):
        doctor.require_ready([ok, warn, fail])
    doctor.require_ready([ok, warn])


def test_a_crashing_check_becomes_a_failed_row():
    def broken():
        raise KeyError("project")

    (row,) = doctor.guard("pacotes", broken)
    assert row.status == FAIL and "KeyError" in row.detail


def test_the_cli_prints_the_lesson_times_unless_asked_not_to(healthy, monkeypatch, capsys):
    monkeypatch.setattr(doctor, "check_lesson_times", lambda: [Row(WARN, "05_x.ipynb", "~40 min")])
    assert doctor.main(["--offline"]) == 0  # os tempos informam, não bloqueiam
    assert "05_x.ipynb" in capsys.readouterr().out
    doctor.main(["--offline", "--no-times"])
    assert "05_x.ipynb" not in capsys.readouterr().out
