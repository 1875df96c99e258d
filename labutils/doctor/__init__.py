"""Diagnóstico do ambiente: responde antes da aula "por que não funciona na minha máquina?".

Cada verificação é uma função pequena que devolve uma ou mais linhas :class:`Row` (situação
✅/⚠️/❌, item, detalhe e, quando algo falta, como resolver). As versões esperadas vêm de
``pyproject.toml`` (``[project] dependencies`` + o extra ``test``), a única fonte da verdade.

Onde fica cada parte:

- :mod:`~labutils.doctor.rows`: a linha do relatório e os símbolos;
- :mod:`~labutils.doctor.pins`: versões fixadas, Python e pacotes, comandos ``pip install``;
- :mod:`~labutils.doctor.tf`: TensorFlow e tf-keras (sonda num subprocesso);
- :mod:`~labutils.doctor.raycheck`: Ray, painel, autenticação e portas;
- :mod:`~labutils.doctor.env`: núcleos, escala, dados e rede;
- :mod:`~labutils.doctor.report`: resumo, texto, tabela e código de saída;
- :mod:`~labutils.doctor.speed`: os minutos de cada lição aqui (sonda + ensaio de referência);
- aqui: :func:`run_checks` (a ordem do relatório) e :func:`main` (a linha de comando).

Linha de comando (o instrutor pode rodar em todas as máquinas da sala)::

    python -m labutils.doctor             # sai com código 1 se algo impede as lições (❌)
    python -m labutils.doctor --strict    # também sai com 1 se houver avisos (⚠️)
    python -m labutils.doctor --offline   # não testa o acesso aos servidores dos dados
    python -m labutils.doctor --no-times  # sem a estimativa do tempo de cada lição (~10 s)

Nada aqui trava: rede e TensorFlow são testados com tempo-limite curto.
"""

from __future__ import annotations

import argparse

from labutils.doctor.env import (
    HOST_TIMEOUT_S,
    check_cpus,
    check_datasets,
    check_hosts,
    check_scale,
    dataset_hosts,
)
from labutils.doctor.pins import (
    PYPROJECT,
    check_package,
    check_packages,
    check_python,
    missing_extras,
    pinned,
    pip_install,
    project_spec,
)
from labutils.doctor.raycheck import (
    RAY_PORTS,
    check_auth,
    check_ports,
    check_ray,
    dashboard_missing,
)
from labutils.doctor.report import (
    EnvironmentNotReady,
    as_frame,
    as_table,
    exit_code,
    format_report,
    require_ready,
    summary,
)
from labutils.doctor.rows import FAIL, INSTALL_HINT, OK, WARN, Row, guard
from labutils.doctor.speed import check_lesson_times
from labutils.doctor.tf import TF_TIMEOUT_S, check_tensorflow, check_tf_keras, tf_probe

__all__ = [
    "FAIL",
    "HOST_TIMEOUT_S",
    "INSTALL_HINT",
    "OK",
    "PYPROJECT",
    "RAY_PORTS",
    "TF_TIMEOUT_S",
    "WARN",
    "EnvironmentNotReady",
    "Row",
    "as_frame",
    "as_table",
    "check_auth",
    "check_cpus",
    "check_datasets",
    "check_hosts",
    "check_package",
    "check_packages",
    "check_ports",
    "check_python",
    "check_ray",
    "check_scale",
    "check_tensorflow",
    "check_tf_keras",
    "dashboard_missing",
    "dataset_hosts",
    "exit_code",
    "format_report",
    "guard",
    "main",
    "missing_extras",
    "pinned",
    "pip_install",
    "project_spec",
    "require_ready",
    "check_lesson_times",
    "run_checks",
    "summary",
    "tf_probe",
]


def run_checks(*, offline: bool = False, tf_timeout: float = TF_TIMEOUT_S) -> list[Row]:
    """Todas as verificações, na ordem do relatório.

    As funções são procuradas neste módulo na hora da chamada: um teste pode trocar uma delas
    (``monkeypatch.setattr(doctor, "tf_probe", ...)``).
    """
    rows: list[Row] = []
    rows += guard("Python", check_python)
    rows += guard("pacotes", check_packages)
    rows += guard("CPUs", check_cpus)
    probe = tf_probe(timeout=tf_timeout)
    rows += guard("TensorFlow", lambda: check_tensorflow(probe))
    rows += guard("tf-keras", lambda: check_tf_keras(probe))
    rows += guard("Ray", check_ray)
    rows += guard("Ray: autenticação", check_auth)
    rows += guard("portas", check_ports)
    rows += guard("escala", check_scale)
    host_rows: list[Row] = []
    reachable: dict[str, bool] | None = None
    if not offline:
        try:
            host_rows, reachable = check_hosts()
        except Exception as err:  # o diagnóstico deve sempre terminar
            host_rows = [Row(FAIL, "rede", f"a verificação falhou: {type(err).__name__}: {err}")]
    rows += guard("dados", lambda: check_datasets(reachable))
    rows += host_rows
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m labutils.doctor", description="Diagnóstico do ambiente do laboratório."
    )
    parser.add_argument("--strict", action="store_true", help="avisos (⚠️) também dão código 1")
    parser.add_argument("--offline", action="store_true", help="não testa os servidores de dados")
    parser.add_argument(
        "--no-times", action="store_true", help="não estima os minutos de cada lição aqui"
    )
    args = parser.parse_args(argv)
    rows = run_checks(offline=args.offline)
    # os tempos informam; não decidem se a máquina está pronta (nem com --strict)
    times = [] if args.no_times else guard("tempo das lições", check_lesson_times)
    print(format_report(rows + times))
    return exit_code(rows, strict=args.strict)
