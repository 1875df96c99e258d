"""Versões fixadas: lidas de ``pyproject.toml`` (a única fonte) e comparadas com
``importlib.metadata``. Os comandos ``pip install`` das mensagens também saem daqui."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterable
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from labutils.config import REPO_ROOT
from labutils.doctor.rows import FAIL, INSTALL_HINT, OK, WARN, Row

PYPROJECT = REPO_ROOT / "pyproject.toml"


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


@lru_cache(maxsize=1)
def _pins() -> dict[str, Requirement]:
    return {r.name.lower(): r for r in project_spec()[1]}


def pinned(name: str) -> Requirement:
    """O requisito fixado de ``name`` (ex.: ``pinned("ray")`` → ``ray[...]==2.60.0``)."""
    try:
        return _pins()[name.lower()]
    except KeyError:
        raise ValueError(f"{name!r} não está fixado em pyproject.toml.") from None


def pip_install(name: str, extras: Iterable[str] | None = None) -> str:
    """O comando ``pip install`` com a versão fixada, pronto para uma mensagem.

    ``extras`` troca os extras do pino (ex.: ``tensorflow`` com ``and-cuda``).
    """
    req = pinned(name)
    chosen = sorted(req.extras if extras is None else extras)
    extra = f"[{','.join(chosen)}]" if chosen else ""
    return f"pip install '{req.name}{extra}{req.specifier}'"


def supported_python(spec: SpecifierSet) -> str:
    """A menor versão ``3.X`` que atende ``spec`` (ex.: ``>=3.11,<3.12`` → ``3.11``)."""
    for minor in range(8, 40):
        if Version(f"3.{minor}.0") in spec or Version(f"3.{minor}.99") in spec:
            return f"3.{minor}"
    return str(spec)


def check_python(
    spec: SpecifierSet | None = None, version: tuple[int, int, int] | None = None
) -> Row:
    spec = spec if spec is not None else project_spec()[0]
    found = ".".join(map(str, version or sys.version_info[:3]))
    if Version(found) in spec:
        return Row(OK, "Python", f"{found} ({sys.executable})")
    wanted = supported_python(spec)
    return Row(
        FAIL,
        "Python",
        f"{found}, mas o projeto pede {spec}",
        f"Crie o ambiente com Python {wanted}: `make setup PYTHON=python{wanted}` "
        "ou `conda env create -f environment.yml`.",
    )


def missing_extras(req: Requirement) -> list[str]:
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
    missing = missing_extras(req) if req.extras else []
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
