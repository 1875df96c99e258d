"""Testes do diagnóstico (labutils.doctor): cada verificação com o caso de falha simulado."""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from labutils import data, doctor, system
from labutils.doctor import FAIL, OK, WARN, Row

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- versões


def test_python_wrong_version_blocks():
    row = doctor.check_python(SpecifierSet(">=3.11,<3.12"), (3, 10, 4))
    assert row.status == FAIL and "3.10.4" in row.detail and "3.11" in row.remedy
    assert doctor.check_python(SpecifierSet(">=3.11,<3.12"), (3, 11, 9)).status == OK


def test_package_installed_at_the_pinned_version_is_ok():
    import pytest as installed

    row = doctor.check_package(Requirement(f"pytest=={installed.__version__}"))
    assert row == Row(OK, "pytest", installed.__version__)


def test_package_wrong_version_warns_with_both_versions():
    import pytest as installed

    row = doctor.check_package(Requirement("pytest==1.0.0"))
    assert row.status == WARN
    assert installed.__version__ in row.detail and "==1.0.0" in row.detail
    assert "pip install" in row.remedy


def test_package_missing_blocks():
    row = doctor.check_package(Requirement("pacote-que-nao-existe==1.0"))
    assert row.status == FAIL and "não instalado" in row.detail and row.remedy


def test_package_extra_with_missing_dependency_blocks(monkeypatch):
    real_requires = metadata.requires

    def requires(name):
        if name == "pytest":
            return ["dependencia-fantasma>=1; extra == 'painel'"]
        return real_requires(name)

    monkeypatch.setattr(metadata, "requires", requires)
    import pytest as installed

    row = doctor.check_package(Requirement(f"pytest[painel]=={installed.__version__}"))
    assert row.status == FAIL and "dependencia-fantasma" in row.detail


def test_ray_extras_of_the_course_are_installed():
    (ray_req,) = [r for r in doctor.project_spec()[1] if r.name == "ray"]
    assert ray_req.extras and doctor.missing_extras(ray_req) == []


# ---------------------------------------------------------------- TensorFlow (sonda simulada)

GOOD_PROBE = {
    "tf": "2.21.0",
    "gpus": [],
    "logical_cpus": 2,
    "tf_keras": "2.21.0",
    "legacy_keras": True,
}


def test_tensorflow_ok_on_cpu_only_machine():
    row = doctor.check_tensorflow(GOOD_PROBE, gpu_on_machine=False)
    assert row.status == OK and "GPUs: 0" in row.detail and "2 dispositivos" in row.detail


def test_gpu_present_but_not_seen_by_tensorflow_warns():
    row = doctor.check_tensorflow(GOOD_PROBE, gpu_on_machine=True)
    assert row.status == WARN and "and-cuda" in row.remedy


def test_gpu_seen_is_reported():
    probe = {**GOOD_PROBE, "gpus": ["/physical_device:GPU:0"]}
    row = doctor.check_tensorflow(probe, gpu_on_machine=True)
    assert row.status == OK and "GPUs: 1" in row.detail


def test_tensorflow_that_cannot_split_the_cpu_blocks():
    probe = {**GOOD_PROBE, "split_error": "RuntimeError: Virtual devices cannot be modified"}
    probe.pop("logical_cpus")
    assert doctor.check_tensorflow(probe, gpu_on_machine=False).status == FAIL


def test_tf_keras_missing_or_inactive_blocks():
    assert doctor.check_tf_keras(GOOD_PROBE).status == OK
    missing = {**GOOD_PROBE, "tf_keras_error": "ModuleNotFoundError: No module named 'tf_keras'"}
    assert doctor.check_tf_keras(missing).status == FAIL
    inactive = {**GOOD_PROBE, "legacy_keras": False}
    assert doctor.check_tf_keras(inactive).status == FAIL
    broken_tf = {"error": "import tensorflow falhou"}
    assert doctor.check_tensorflow(broken_tf).status == FAIL
    assert doctor.check_tf_keras(broken_tf).status == FAIL


def test_tf_probe_that_hangs_is_cut_by_the_timeout(tmp_path):
    hang = tmp_path / "python_travado"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    t0 = time.monotonic()
    probe = doctor.tf_probe(timeout=1, python=str(hang))
    assert time.monotonic() - t0 < 10
    assert "1 s" in probe["error"]
    assert doctor.check_tensorflow(probe).status == FAIL


def test_tf_probe_reports_a_failed_import(tmp_path):
    fake = tmp_path / "python_sem_tf"
    fake.write_text(
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'tensorflow'\" >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    probe = doctor.tf_probe(timeout=10, python=str(fake))
    assert "código 1" in probe["error"] and "tensorflow" in probe["error"]


# ---------------------------------------------------------------- Ray e portas


def test_ray_imports():
    row = doctor.check_ray()
    assert row.status == OK and "import ray" in row.detail


def test_ray_without_dashboard_dependencies_blocks_in_one_row(monkeypatch):
    """Um módulo do extra ``ray[default]`` some: a linha do pacote ``ray`` acusa, com o pip
    install fixado, e só ela (a linha "Ray", do ``import``, não repete a mesma causa)."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    # já importado conta como presente
    monkeypatch.delitem(sys.modules, "aiohttp_cors", raising=False)
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "aiohttp_cors" else real_find_spec(name, *a),
    )
    ray_pin = doctor.pinned("ray")
    row = doctor.check_package(ray_pin)
    assert row.status == FAIL and "aiohttp_cors" in row.detail
    assert f"{ray_pin.specifier}'" in row.remedy and "ray[" in row.remedy
    assert doctor.check_ray().status == OK


def test_dashboard_dependencies_come_from_ray_metadata(monkeypatch):
    """A lista vem de ``metadata.requires("ray")``: uma distribuição ausente é acusada pelo nome."""
    real_requires = metadata.requires

    def requires(name):
        extra = ['pacote-fantasma-do-painel>=1; extra == "default"']
        return (real_requires(name) or []) + extra if name == "ray" else real_requires(name)

    monkeypatch.setattr(metadata, "requires", requires)
    assert doctor.missing_extras(Requirement("ray[default]")) == ["pacote-fantasma-do-painel"]


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
    monkeypatch.setattr(doctor, "tf_probe", lambda timeout: dict(GOOD_PROBE))
    monkeypatch.setattr(doctor, "check_ports", lambda: [Row(OK, "portas", "livres")])


def test_cli_exits_zero_unless_something_blocks_and_warns_with_strict(healthy, monkeypatch, capsys):
    assert doctor.main(["--offline", "--no-times"]) == 0
    assert "pronto" in capsys.readouterr().out.lower()
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # um aviso: só o --strict dá código 1
    assert doctor.main(["--offline", "--no-times"]) == 0
    assert doctor.main(["--offline", "--strict", "--no-times"]) == 1
    out = capsys.readouterr().out
    assert "⚠️ Ray: autenticação" in out and "DESLIGADA" in out and "RAY_AUTH_MODE=token" in out


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


def test_port_taken_warns_and_free_port_is_ok():
    with listening_and_closed_port() as (taken, free):
        rows = doctor.check_ports({"cabeça": taken, "painel": free})
    assert [r.status for r in rows] == [WARN, OK]
    assert str(taken) in rows[0].item and f":{taken}" in rows[0].remedy


# ---------------------------------------------------------------- escala, dados e rede


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


def test_hosts_reachable_and_unreachable_on_localhost():
    with listening_and_closed_port() as (up, down):
        rows, reachable = doctor.check_hosts(
            {"A": ("127.0.0.1", up), "B": ("127.0.0.1", down)}, timeout=1
        )
    assert reachable == {"A": True, "B": False}
    assert [r.status for r in rows] == [OK, WARN] and "make data" in rows[1].remedy


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


def test_single_cpu_warns():
    assert doctor.check_cpus(1).status == WARN
    assert doctor.check_cpus(2).status == OK


# ---------------------------------------------------------------- relatório e código de saída


def test_exit_code_blocks_only_on_failures_unless_strict():
    ok, warn, fail = Row(OK, "a", ""), Row(WARN, "b", ""), Row(FAIL, "c", "", "faça X")
    assert doctor.exit_code([ok, warn]) == 0
    assert doctor.exit_code([ok, warn], strict=True) == 1
    assert doctor.exit_code([ok, fail]) == 1
    with pytest.raises(doctor.EnvironmentNotReady, match="faça X"):
        doctor.require_ready([ok, warn, fail])
    doctor.require_ready([ok, warn])


def test_a_crashing_check_becomes_a_failed_row():
    def broken():
        raise KeyError("project")

    (row,) = doctor.guard("pacotes", broken)
    assert row.status == FAIL and "KeyError" in row.detail


def test_cli_reports_and_exits_non_zero_on_a_blocker(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "tf_probe", lambda timeout: {"error": "sem TensorFlow"})
    code = doctor.main(["--offline", "--no-times"])
    out = capsys.readouterr().out
    assert code == 1
    assert "❌ TensorFlow" in out and "sem TensorFlow" in out and "impedem as lições" in out


def test_pins_fall_back_to_installed_metadata_without_pyproject(tmp_path):
    spec, reqs = doctor.project_spec(tmp_path / "sem_pyproject.toml")
    assert "3.11.5" in spec and "3.13.1" in spec and "3.10.9" not in spec
    pins = {r.name: str(r.specifier) for r in reqs}
    assert pins["tensorflow"] == "==2.21.0" and "pytest" in pins
    assert all(r.marker is None for r in reqs)


def test_the_cli_prints_the_lesson_times_unless_asked_not_to(healthy, monkeypatch, capsys):
    monkeypatch.setattr(doctor, "check_lesson_times", lambda: [Row(WARN, "05_x.ipynb", "~40 min")])
    assert doctor.main(["--offline"]) == 0  # os tempos informam, não bloqueiam
    assert "05_x.ipynb" in capsys.readouterr().out
    doctor.main(["--offline", "--no-times"])
    assert "05_x.ipynb" not in capsys.readouterr().out
