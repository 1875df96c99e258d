"""Diagnóstico do ambiente: responde antes da aula "por que não funciona na minha máquina?".

Cada verificação é uma função pequena que devolve uma ou mais linhas :class:`Row` (situação
✅/⚠️/❌, item, detalhe e, quando algo falta, como resolver). As versões esperadas vêm de
``pyproject.toml`` (``[project] dependencies`` + o extra ``test``), a única fonte da verdade.

Linha de comando (o instrutor pode rodar em todas as máquinas da sala)::

    python -m labutils.doctor             # sai com código 1 se algo impede as lições (❌)
    python -m labutils.doctor --strict    # também sai com 1 se houver avisos (⚠️)
    python -m labutils.doctor --offline   # não testa o acesso aos servidores dos dados

Nada aqui trava: rede e TensorFlow são testados com tempo-limite curto.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from labutils import data
from labutils.config import SCALE_ENV, SCALES, current_scale

OK, WARN, FAIL = "✅", "⚠️", "❌"
REPO_ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = REPO_ROOT / "pyproject.toml"
INSTALL_HINT = 'rode `make setup` (ou `pip install -e ".[test]"`) na raiz do repositório'
RAY_PORTS = {"cabeça do Ray": 6379, "painel do Ray": 8265}
HOST_TIMEOUT_S = 2.0
TF_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Row:
    """Uma linha do relatório."""

    status: str
    item: str
    detail: str
    remedy: str = ""

    @property
    def blocks(self) -> bool:
        return self.status == FAIL


# ---------------------------------------------------------------- versões fixadas


def project_spec(path: Path = PYPROJECT) -> tuple[SpecifierSet, list[Requirement]]:
    """Lê ``requires-python`` e as dependências fixadas (+ extra ``test``) do ``pyproject.toml``.

    Sem o arquivo (pacote instalado sem o repositório), usa os metadados do ``labutils``.
    """
    if path.exists():
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        lines = project["dependencies"] + project.get("optional-dependencies", {}).get("test", [])
        return SpecifierSet(project["requires-python"]), [Requirement(x) for x in lines]
    meta = metadata.metadata("labutils")
    reqs = [Requirement(x) for x in metadata.requires("labutils") or []]
    keep = [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": "test"})]
    for r in keep:
        r.marker = None
    return SpecifierSet(meta["Requires-Python"] or ""), keep


def check_python(
    spec: SpecifierSet | None = None, version: tuple[int, int, int] | None = None
) -> Row:
    spec = spec if spec is not None else project_spec()[0]
    found = ".".join(map(str, version or sys.version_info[:3]))
    if Version(found) in spec:
        return Row(OK, "Python", f"{found} ({sys.executable})")
    return Row(
        FAIL,
        "Python",
        f"{found}, mas o projeto pede {spec}",
        "Crie o ambiente com Python 3.11: `make setup PYTHON=python3.11` "
        "ou `conda env create -f environment.yml`.",
    )


def _missing_extras(req: Requirement) -> list[str]:
    """Dependências dos extras pedidos (ex.: ``ray[default]``) que não estão instaladas."""
    missing = []
    for line in metadata.requires(req.name) or []:
        dep = Requirement(line)
        if dep.marker is None or not any(dep.marker.evaluate({"extra": e}) for e in req.extras):
            continue
        try:
            metadata.version(dep.name)
        except metadata.PackageNotFoundError:
            missing.append(dep.name)
    return sorted(set(missing))


def check_package(req: Requirement) -> Row:
    """Versão instalada de um pacote contra o pino de ``pyproject.toml``."""
    try:
        found = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        return Row(FAIL, req.name, "não instalado", f"{INSTALL_HINT}.")
    if not req.specifier.contains(found, prereleases=True):
        return Row(
            WARN,
            req.name,
            f"instalado {found}, o curso foi testado com {req.specifier}",
            f"Versões diferentes podem mudar APIs e mensagens: {INSTALL_HINT}.",
        )
    missing = _missing_extras(req) if req.extras else []
    if missing:
        return Row(
            FAIL,
            req.name,
            f"{found}, mas faltam dependências de [{','.join(sorted(req.extras))}]: "
            + ", ".join(missing),
            f"{INSTALL_HINT}.",
        )
    return Row(OK, req.name, found)


def check_packages(reqs: Iterable[Requirement] | None = None) -> list[Row]:
    return [check_package(r) for r in (reqs if reqs is not None else project_spec()[1])]


# ---------------------------------------------------------------- TensorFlow

# Roda num processo separado: dividir a CPU em dispositivos lógicos só funciona antes de o
# TensorFlow iniciar seus dispositivos, e o kernel do notebook não deve ficar "gasto".
_TF_PROBE = r"""
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
out = {}
import tensorflow as tf
out["tf"] = tf.__version__
out["gpus"] = [d.name for d in tf.config.list_physical_devices("GPU")]
try:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    out["logical_cpus"] = len(tf.config.list_logical_devices("CPU"))
except Exception as err:
    out["split_error"] = f"{type(err).__name__}: {err}"
try:
    import tf_keras
    out["tf_keras"] = tf_keras.__version__
    out["legacy_keras"] = tf.keras.__name__.startswith("tf_keras")
except Exception as err:
    out["tf_keras_error"] = f"{type(err).__name__}: {err}"
print("DOCTOR_JSON=" + json.dumps(out))
"""


def tf_probe(timeout: float = TF_TIMEOUT_S, python: str = sys.executable) -> dict:
    """Importa o TensorFlow num subprocesso e devolve o que ele viu (ou ``{"error": ...}``)."""
    if not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"timeout deve ser um número de segundos > 0, recebi {timeout!r}.")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        proc = subprocess.run(
            [python, "-c", _TF_PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"o TensorFlow não carregou em {timeout:g} s"}
    except OSError as err:
        return {"error": f"não consegui rodar {python}: {err}"}
    for line in proc.stdout.splitlines():
        if line.startswith("DOCTOR_JSON="):
            return json.loads(line.removeprefix("DOCTOR_JSON="))
    tail = (proc.stderr.strip().splitlines() or ["(sem mensagem)"])[-1]
    return {"error": f"import tensorflow falhou (código {proc.returncode}): {tail}"}


def _gpu_on_machine() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()


def check_tensorflow(probe: dict, gpu_on_machine: bool | None = None) -> Row:
    if "error" in probe:
        return Row(FAIL, "TensorFlow", probe["error"], f"{INSTALL_HINT}; depois rode de novo.")
    gpus = probe.get("gpus", [])
    if "split_error" in probe:
        return Row(
            FAIL,
            "TensorFlow",
            f"{probe['tf']}: não consegui dividir a CPU em 2 dispositivos ({probe['split_error']})",
            "A lição 05 precisa disso: reinstale o TensorFlow fixado e rode num processo novo.",
        )
    detail = f"{probe['tf']}; GPUs: {len(gpus)}; CPU dividida em {probe['logical_cpus']} dispositivos lógicos"
    if not gpus and (gpu_on_machine if gpu_on_machine is not None else _gpu_on_machine()):
        return Row(
            WARN,
            "TensorFlow",
            detail + ", mas a máquina tem GPU NVIDIA",
            "O TensorFlow não vê a GPU: instale o suporte CUDA "
            "(`pip install 'tensorflow[and-cuda]==2.21.0'`) e confira `nvidia-smi`. "
            "As lições rodam na CPU mesmo assim.",
        )
    if not gpus:
        detail += " (sem GPU: as lições usam CPUs lógicas)"
    return Row(OK, "TensorFlow", detail)


def check_tf_keras(probe: dict) -> Row:
    item = "tf-keras (exercício multi-worker)"
    if "error" in probe:
        return Row(
            FAIL, item, "não testado: o TensorFlow não carregou", "Resolva a linha do TensorFlow."
        )
    if "tf_keras_error" in probe:
        return Row(
            FAIL, item, probe["tf_keras_error"], f"{INSTALL_HINT} (instala tf-keras==2.21.0)."
        )
    if not probe.get("legacy_keras"):
        return Row(
            FAIL,
            item,
            f"tf_keras {probe['tf_keras']} instalado, mas TF_USE_LEGACY_KERAS=1 não o ativou",
            "Use versões do tf-keras e do TensorFlow iguais (2.21.x): " + INSTALL_HINT + ".",
        )
    return Row(OK, item, f"{probe['tf_keras']} (ativado com TF_USE_LEGACY_KERAS=1)")


# ---------------------------------------------------------------- Ray e portas


def check_ray() -> Row:
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    try:
        import ray
        from ray._private.utils import get_dashboard_dependency_error
    except ImportError as err:
        return Row(FAIL, "Ray", f"não importa: {err}", f"{INSTALL_HINT}.")
    error = get_dashboard_dependency_error()
    if error is not None:
        return Row(
            FAIL,
            "Ray",
            f"{ray.__version__} sem suporte ao painel: {error}",
            "Instale o Ray com os extras do curso: `pip install 'ray[default,train,tune,data]==2.60.0'`.",
        )
    return Row(OK, "Ray", f"{ray.__version__} com painel (dashboard)")


def port_free(port: int, host: str = "0.0.0.0") -> bool:
    """``True`` se dá para abrir um servidor em ``host:port`` (o mesmo teste que o Ray faz)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"Porta inválida: {port!r} (use um inteiro de 1 a 65535).")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def check_ports(ports: dict[str, int] | None = None) -> list[Row]:
    rows = []
    for what, port in (ports or RAY_PORTS).items():
        item = f"porta {port}: {what}"
        if port_free(port):
            rows.append(Row(OK, item, "livre"))
            continue
        rows.append(
            Row(
                WARN,
                item,
                "ocupada por outro programa (talvez um Ray que ficou rodando)",
                f"Veja quem usa: `ss -ltnp | grep :{port}`. Se for um Ray seu, `ray status` e "
                "`ray stop`; senão inicie a cabeça em outra porta "
                "(`ray start --head --port=6380 --dashboard-port=8266`). "
                "O ray.init() dos notebooks escolhe outra porta do painel sozinho.",
            )
        )
    return rows


# ---------------------------------------------------------------- dados, escala e rede


def check_scale() -> Row:
    try:
        scale = current_scale()
    except ValueError as err:
        return Row(
            FAIL, "escala", str(err), f"Use {SCALE_ENV}=full (aula) ou smoke (teste rápido)."
        )
    if scale == "smoke":
        return Row(
            OK,
            "escala",
            "smoke: tamanhos mínimos e dados locais/sintéticos (para testar, não para medir)",
        )
    return Row(OK, "escala", f"full: tamanhos da aula (mude com {SCALE_ENV}={'|'.join(SCALES)})")


def dataset_hosts() -> dict[str, str]:
    """Servidores de onde cada conjunto é baixado."""
    from urllib.parse import urlparse

    try:
        from sklearn.datasets._california_housing import ARCHIVE

        housing = urlparse(ARCHIVE.url).hostname or ARCHIVE.url
    except ImportError:  # scikit-learn ausente: a linha do pacote já acusa
        housing = "ndownloader.figshare.com"
    return {"California Housing": housing, "CIFAR-100": data.CIFAR_HOST}


def check_datasets(reachable: dict[str, bool] | None = None) -> list[Row]:
    """Dados em ``data/``. ``reachable``: nome → servidor acessível (``None`` = não testado)."""
    try:
        smoke = current_scale() == "smoke"
    except ValueError:
        smoke = False
    rows = []
    for name, present in data.datasets_present().items():
        item = f"dados: {name}"
        if present:
            rows.append(Row(OK, item, f"presente em {data.data_dir()}"))
        elif smoke:
            rows.append(Row(OK, item, "ausente, mas a escala smoke usa dados locais"))
        elif reachable is not None and not reachable.get(name, False):
            rows.append(
                Row(
                    FAIL,
                    item,
                    f"ausente em {data.data_dir()} e o servidor está inacessível",
                    "Numa máquina com internet rode `make data` e copie a pasta data/ para cá "
                    f"(ou aponte {data.DATA_DIR_ENV} para ela); para só testar: {SCALE_ENV}=smoke.",
                )
            )
        else:
            rows.append(
                Row(
                    WARN,
                    item,
                    f"ausente em {data.data_dir()}: será baixado na primeira lição que o usar",
                    "Baixe antes da aula para não depender da rede: `make data`.",
                )
            )
    return rows


def check_hosts(
    hosts: dict[str, str | tuple[str, int]] | None = None, timeout: float = HOST_TIMEOUT_S
) -> tuple[list[Row], dict[str, bool]]:
    """Testa em paralelo se cada servidor abre conexão em até ``timeout`` segundos."""
    targets = {
        k: v if isinstance(v, tuple) else (v, 443) for k, v in (hosts or dataset_hosts()).items()
    }
    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
        futures = {
            k: pool.submit(data.host_reachable, h, p, timeout) for k, (h, p) in targets.items()
        }
        reachable = {k: f.result() for k, f in futures.items()}
    rows = []
    for name, (host, _port) in targets.items():
        item = f"rede: {host}"
        if reachable[name]:
            rows.append(Row(OK, item, f"acessível ({name})"))
        else:
            rows.append(
                Row(
                    WARN,
                    item,
                    f"sem resposta em {timeout:g} s ({name})",
                    "Sem internet só funcionam os dados já em data/ e a escala smoke; "
                    "confira proxy/firewall ou rode `make data` onde houver rede.",
                )
            )
    return rows, reachable


def check_cpus(count: int | None = None) -> Row:
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"count deve ser um inteiro >= 1 (núcleos), recebi {count!r}.")
    count = count if count is not None else (os.cpu_count() or 1)
    if count >= 2:
        return Row(OK, "CPUs", f"{count} núcleos")
    return Row(
        WARN,
        "CPUs",
        f"{count} núcleo: as comparações com 2 workers não terão ganho",
        "Use uma máquina com 2 ou mais núcleos (ou junte outro nó ao cluster Ray).",
    )


# ---------------------------------------------------------------- relatório


def _guard(item: str, check: Callable[[], Row | list[Row]]) -> list[Row]:
    """Roda uma verificação; um erro inesperado vira uma linha ❌, não derruba o relatório."""
    try:
        out = check()
    except Exception as err:  # o diagnóstico deve sempre terminar
        return [Row(FAIL, item, f"a verificação falhou: {type(err).__name__}: {err}", INSTALL_HINT)]
    return out if isinstance(out, list) else [out]


def run_checks(*, offline: bool = False, tf_timeout: float = TF_TIMEOUT_S) -> list[Row]:
    """Todas as verificações, na ordem do relatório."""
    rows: list[Row] = []
    rows += _guard("Python", check_python)
    rows += _guard("pacotes", check_packages)
    rows += _guard("CPUs", check_cpus)
    probe = tf_probe(timeout=tf_timeout)
    rows += _guard("TensorFlow", lambda: check_tensorflow(probe))
    rows += _guard("tf-keras", lambda: check_tf_keras(probe))
    rows += _guard("Ray", check_ray)
    rows += _guard("portas", check_ports)
    rows += _guard("escala", check_scale)
    host_rows: list[Row] = []
    reachable: dict[str, bool] | None = None
    if not offline:
        try:
            host_rows, reachable = check_hosts()
        except Exception as err:  # o diagnóstico deve sempre terminar
            host_rows = [Row(FAIL, "rede", f"a verificação falhou: {type(err).__name__}: {err}")]
    rows += _guard("dados", lambda: check_datasets(reachable))
    rows += host_rows
    return rows


def exit_code(rows: Iterable[Row], strict: bool = False) -> int:
    """1 se alguma linha bloqueia as lições (ou, com ``strict``, se houver avisos)."""
    bad = {FAIL, WARN} if strict else {FAIL}
    return 1 if any(r.status in bad for r in rows) else 0


def as_frame(rows: Iterable[Row]):
    """O relatório como tabela (pandas), para o notebook 00."""
    import pandas as pd

    return pd.DataFrame(
        [(r.status, r.item, r.detail, r.remedy) for r in rows],
        columns=["", "item", "detalhe", "como resolver"],
    )


def as_table(rows: Iterable[Row]):
    """A tabela do notebook 00: sem índice, texto inteiro e alinhado à esquerda."""
    return (
        as_frame(rows)
        .style.hide(axis="index")
        .set_properties(**{"text-align": "left", "white-space": "pre-wrap"})
    )


class EnvironmentNotReady(RuntimeError):
    """Algum item do diagnóstico impede as lições (❌)."""


def require_ready(rows: list[Row]) -> None:
    """Levanta :class:`EnvironmentNotReady` com o que fazer, se alguma linha for ❌."""
    fails = [r for r in rows if r.blocks]
    if fails:
        steps = "\n".join(f"  - {r.item}: {r.detail}\n    → {r.remedy}" for r in fails)
        raise EnvironmentNotReady(f"O ambiente ainda não está pronto para as lições:\n{steps}")


def summary(rows: list[Row]) -> str:
    fails = [r for r in rows if r.status == FAIL]
    warns = [r for r in rows if r.status == WARN]
    if fails:
        return f"{FAIL} {len(fails)} problema(s) impedem as lições: " + "; ".join(
            r.item for r in fails
        )
    if warns:
        return f"{WARN} Pronto para as lições, com {len(warns)} aviso(s): " + "; ".join(
            r.item for r in warns
        )
    return f"{OK} Tudo pronto para as lições."


def format_report(rows: list[Row]) -> str:
    width = max(len(r.item) for r in rows)
    lines = []
    for r in rows:
        lines.append(f"{r.status} {r.item:<{width}}  {r.detail}")
        if r.remedy:
            lines.append(f"{'':{width + 3}}→ {r.remedy}")
    return "\n".join(lines + ["", summary(rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m labutils.doctor", description="Diagnóstico do ambiente do laboratório."
    )
    parser.add_argument("--strict", action="store_true", help="avisos (⚠️) também dão código 1")
    parser.add_argument("--offline", action="store_true", help="não testa os servidores de dados")
    args = parser.parse_args(argv)
    rows = run_checks(offline=args.offline)
    print(format_report(rows))
    return exit_code(rows, strict=args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
