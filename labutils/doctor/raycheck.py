"""Ray: importa, tem o painel (dashboard), autenticação ligada, portas padrão livres.

As dependências do painel são as do extra ``ray[default]``, lidas dos metadados do próprio Ray
(``importlib.metadata.requires("ray")``) e procuradas com ``importlib.util.find_spec``: nada da
API privada do Ray, que muda entre versões.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from importlib import metadata

from packaging.requirements import Requirement

from labutils import config, system
from labutils.doctor.pins import pip_install
from labutils.doctor.rows import FAIL, INSTALL_HINT, OK, WARN, Row

RAY_PORTS = {"nó principal do Ray": 6379, "painel do Ray": 8265}
DASHBOARD_EXTRA = "default"


@lru_cache(maxsize=1)
def _packages_distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _modules_of(dist: str) -> list[str]:
    """Módulos de primeiro nível que a distribuição ``dist`` instala (``grpcio`` → ``grpc``).

    Distribuições só com programas (``py-spy``) não têm módulo: lista vazia.
    """
    top = metadata.distribution(dist).read_text("top_level.txt")
    if top:
        return [m for m in top.split() if m and not m.startswith("_")]
    wanted = metadata.distribution(dist).metadata["Name"]
    return sorted(
        m
        for m, dists in _packages_distributions().items()
        if wanted in dists and m.isidentifier() and not m.startswith("_")
    )


def dashboard_missing(extra: str = DASHBOARD_EXTRA) -> list[str]:
    """O que falta do extra ``ray[extra]``: distribuições não instaladas ou módulos que não
    se encontram (``find_spec``). Lista vazia: o painel pode subir."""
    missing = []
    for line in metadata.requires("ray") or []:
        dep = Requirement(line)
        if dep.marker is None or not dep.marker.evaluate({"extra": extra}):
            continue
        try:
            modules = _modules_of(dep.name)
        except metadata.PackageNotFoundError:
            missing.append(dep.name)
            continue
        missing += [m for m in modules if not _importable(m)]
    return sorted(set(missing))


def _importable(module: str) -> bool:
    """O módulo existe? Um já importado conta, mesmo sem ``__spec__`` (o ``find_spec`` levanta
    ``ValueError`` nesse caso: o ``colorful``, que o Ray importa, põe em ``sys.modules`` um objeto
    próprio no lugar do módulo)."""
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_ray() -> Row:
    try:
        import ray
    except ImportError as err:
        return Row(FAIL, "Ray", f"não importa: {err}", f"{INSTALL_HINT}.")
    missing = dashboard_missing()
    if missing:
        return Row(
            FAIL,
            "Ray",
            f"{ray.__version__} sem suporte ao painel: faltam " + ", ".join(missing),
            f"Instale o Ray com os extras do curso: `{pip_install('ray')}`.",
        )
    return Row(OK, "Ray", f"{ray.__version__} com painel (dashboard)")


def check_auth() -> Row:
    """Autenticação por token do Ray: aviso em português se ``RAY_AUTH_MODE=disabled``."""
    warning = config.auth_disabled_warning()
    if warning:
        return Row(WARN, "Ray: autenticação", "DESLIGADA (RAY_AUTH_MODE=disabled)", warning)
    mode = config.ray_auth_mode() or config.RAY_AUTH_MODE_DEFAULT
    return Row(OK, "Ray: autenticação", f"por token (RAY_AUTH_MODE={mode})")


def check_ports(ports: dict[str, int] | None = None) -> list[Row]:
    rows = []
    for what, port in (ports or RAY_PORTS).items():
        item = f"porta {port}: {what}"
        if not system.port_in_use(port):
            rows.append(Row(OK, item, "livre"))
            continue
        rows.append(
            Row(
                WARN,
                item,
                "ocupada por outro programa (talvez um Ray que ficou rodando)",
                f"Veja quem usa: `ss -ltnp | grep :{port}`. Se for um Ray seu, `ray status` e "
                "`ray stop`; senão inicie o nó principal em outra porta "
                "(`ray start --head --port=6380 --dashboard-port=8266`). "
                "O ray.init() dos notebooks escolhe outra porta do painel sozinho.",
            )
        )
    return rows
