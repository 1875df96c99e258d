"""O laboratório no Google Colab: o que a primeira célula de cada lição instala, e o painel.

A primeira célula (escrita por ``make colab-links``) clona o repositório, põe o clone no
``sys.path`` e chama :func:`install`, que instala só o que o Colab não traz (o Ray com os extras,
o Optuna...) com ``pip install -c tools/colab_constraints.txt``: as versões de tudo o que o Colab
já tem ficam presas às dele, menos as de :data:`MAY_CHANGE`. Trocar pacotes do Colab é perigoso:
o ``google-colab`` fixa ``ipython==7.34.0``, e atualizá-lo derruba o runtime até um reset
(colabtools#5580).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parents[1]
#: as versões do Colab (googlecolab/backend-info), geradas por tools/colab_constraints.py
CONSTRAINTS = REPO_ROOT / "tools" / "colab_constraints.txt"
#: o que o Ray 2.60 precisa numa versão diferente da do Colab (medido: só estes dois mudam)
MAY_CHANGE = frozenset({"aiohttp", "yarl"})
#: fixados no pyproject.toml e desnecessários no Colab (o próprio Colab é a interface)
NOT_NEEDED = frozenset({"jupyterlab"})
DASHBOARD_PORT = 8265
#: pacotes do Colab trocados só se o teste deles falhar aqui, sem mexer nas dependências
#: (``--no-deps``). O tensorflow-metadata 1.21.0 do Colab foi gerado com o protobuf 6.31 e o
#: Colab traz o protobuf 5.29.6: o tensorflow_datasets não carrega (VersionError, medido no
#: make colab-check); o 1.17.3 foi gerado com o 4.25 e carrega.
REPAIRS = {"tensorflow-metadata==1.17.3": "import tensorflow_metadata.proto.v0.schema_pb2"}


def canonical(name: str) -> str:
    """O nome de um pacote na forma normalizada (PEP 503): ``tf_keras`` → ``tf-keras``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def on_colab() -> bool:
    """``True`` dentro de um runtime do Colab (onde ``google.colab`` já está carregado)."""
    return "google.colab" in sys.modules


def _split(line: str) -> tuple[str, str]:
    """``"ray[data]==2.60.0"`` → ``("ray", "2.60.0")``."""
    name, _, version = line.partition("==")
    return canonical(name.split("[")[0].strip()), version.strip()


def colab_versions(path: Path = CONSTRAINTS) -> dict[str, str]:
    """Os pacotes do Colab e suas versões, do arquivo de restrições."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(_split(ln) for ln in lines if ln.strip() and not ln.startswith("#"))


def project_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """As dependências do laboratório (sem os extras de teste), como no ``pyproject.toml``."""
    return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"])


def missing_requirements(
    have: dict[str, str] | None = None, requirements: list[str] | None = None
) -> list[str]:
    """O que o Colab não traz, na versão fixada do laboratório: ``["ray[...]==2.60.0", ...]``."""
    have = colab_versions() if have is None else have
    requirements = project_requirements() if requirements is None else requirements
    return [
        line
        for line in requirements
        if _split(line)[0] not in have and _split(line)[0] not in NOT_NEEDED
    ]


def installed(line: str) -> bool:
    """``True`` se o pacote de ``line`` (``nome==versão``) já está instalado nessa versão."""
    name, version = _split(line)
    try:
        return importlib.metadata.version(name) == version
    except importlib.metadata.PackageNotFoundError:
        return False


def pip_command(requirements: list[str]) -> list[str]:
    """O ``pip install`` de ``requirements`` preso às versões do Colab."""
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "-c",
        str(CONSTRAINTS),
        *requirements,
    ]


def broken(test: str) -> bool:
    """``True`` se o código ``test`` falha num Python novo (sem estragar este processo)."""
    return subprocess.run([sys.executable, "-c", test], capture_output=True).returncode != 0


def needed_repairs() -> list[str]:
    """Os consertos de :data:`REPAIRS` que este ambiente precisa (nenhum, se já feitos)."""
    return [line for line, test in REPAIRS.items() if not installed(line) and broken(test)]


def install(run: Callable[..., object] = subprocess.run) -> list[str]:
    """Instala o que falta no Colab (nada, se já estiver) e devolve o que instalou."""
    todo = [line for line in missing_requirements() if not installed(line)]
    repairs = needed_repairs()
    if not todo and not repairs:
        print("Colab: o que o laboratório precisa já está instalado.")
        return []
    print(f"Colab: instalando {', '.join(todo + repairs)} (1–2 min; o resto fica como está)...")
    if todo:
        run(pip_command(todo), check=True)
    if repairs:
        run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *repairs], check=True)
    importlib.invalidate_caches()
    changed = changed_packages()
    if changed:
        print("Atenção: mudaram pacotes do Colab:", ", ".join(changed))
    return todo + repairs


def changed_packages(have: dict[str, str] | None = None) -> list[str]:
    """Pacotes do Colab instalados numa versão diferente da dele (``nome: Colab → agora``)."""
    have = colab_versions() if have is None else have
    found = {canonical(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    repaired = {_split(line)[0] for line in REPAIRS}
    return [
        f"{name}: {version} → {found[name]}"
        for name, version in sorted(have.items())
        if name in found and found[name] != version and name not in repaired
    ]


def show_dashboard(url: str | None) -> bool:
    """No Colab, mostra o painel do Ray (``url``) numa moldura da própria saída da célula; fora
    dele não faz nada. ``True`` se mostrou."""
    if not (url and on_colab()):
        return False
    port = urlsplit(url if "//" in url else f"http://{url}").port or DASHBOARD_PORT
    # o Colab não aceita conexões de fora: o painel só aparece pela saída da célula
    importlib.import_module("google.colab.output").serve_kernel_port_as_iframe(port)
    return True
