"""As versões fixadas ficam num lugar só (pyproject.toml), exatas e instaladas; todo pacote que o
código importa está declarado, e o que ninguém importa diz por que fica."""

import ast
import json
import sys
import tomllib
import urllib.error
import urllib.request
from importlib.metadata import packages_distributions, version
from pathlib import Path

import pytest
import yaml
from packaging import tags
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename

from labutils import system

ROOT = Path(__file__).resolve().parents[1]


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        lines += extra
    return {str(Requirement(line)).split("==")[0]: line for line in lines}


#: declarados sem import direto (o motivo de cada um está ao lado, em pyproject.toml)
RUNTIME_ONLY = {"jupyterlab", "tf-keras", "ipywidgets", "jsonschema", "ruff"}
RUNTIME_ONLY |= {"nbval", "pytest-timeout", "pytest-xdist"}  # plugins do pytest


def test_every_dependency_is_pinned_exactly():
    for line in pyproject_pins().values():
        spec = Requirement(line).specifier
        assert len(spec) == 1 and next(iter(spec)).operator == "==", f"sem versão exata: {line}"


def test_environment_yml_installs_the_project_instead_of_copying_the_pins():
    """Do conda, só um Python que o projeto aceita e o pip; o resto é o próprio projeto
    (``-e .[extras]``), com as versões do pyproject.toml: nenhum pacote nomeado aqui."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = [line for d in env["dependencies"] if isinstance(d, dict) for line in d["pip"]]
    python = next(d.split("=", 1)[1] for d in conda if d.startswith("python="))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert SpecifierSet(requires).contains(python + ".0"), (python, requires)
    assert {d.split("=")[0] for d in conda} == {"python", "pip"}, conda
    assert pip and all(line.startswith("-e .") for line in pip), pip


def imported_top_level_names() -> set[str]:
    """Os módulos de topo importados por labutils/, tools/, tests/ e pelas células dos notebooks."""
    sources = [
        p.read_text(encoding="utf-8")
        for d in ("labutils", "tools")
        for p in (ROOT / d).rglob("*.py")
    ]
    sources += [p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("*.py")]
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        sources.append(
            "\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!")))
        )
    names = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    local = {"labutils", "tools", "processes", "netns", "conftest", "__future__"}
    return names - set(sys.stdlib_module_names) - local


def test_every_imported_package_is_declared_and_every_declared_one_is_used():
    declared = {canonicalize_name(Requirement(line).name) for line in pyproject_pins().values()}
    dists = packages_distributions()
    imported = set()
    for module in imported_top_level_names():
        assert module in dists, f"`import {module}`: nenhum pacote instalado fornece esse módulo"
        imported |= {canonicalize_name(d) for d in dists[module]}
    missing = sorted(imported - declared)
    assert not missing, f"importados e não declarados em pyproject.toml: {missing}"
    unused = sorted(declared - imported - RUNTIME_ONLY)
    assert not unused, f"fixados e que nada importa (tire-os ou diga por quê): {unused}"


def test_installed_versions_match_the_pins():
    for line in pyproject_pins().values():
        req = Requirement(line)
        assert req.specifier.contains(version(req.name)), f"{version(req.name)} != {line}"


def test_importing_ray_does_not_compile_iri_grammars():
    """O ``rfc3987_syntax`` (jsonschema >= 4.25) custa ~1 s a cada processo do Ray que sobe (veja
    o comentário do jsonschema em pyproject.toml)."""
    code = "import sys, ray; print([m for m in ('rfc3987_syntax', 'lark') if m in sys.modules])"
    out = system.run([sys.executable, "-c", code], timeout=120)
    assert out.stdout.strip() == "[]", f"`import ray` carregou {out.stdout.strip()}"


INDEX = "https://pypi.org/simple"
#: onde os alunos instalam: glibc 2.35 (Ubuntu 22.04) ou mais nova; macOS 14 em Apple silicon
STUDENT_PLATFORMS = {
    "Linux x86_64": [f"manylinux_2_{v}_x86_64" for v in range(35, 4, -1)]
    + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"],
    "Linux aarch64": [f"manylinux_2_{v}_aarch64" for v in range(35, 16, -1)]
    + ["manylinux2014_aarch64"],
    "macOS arm64": list(tags.mac_platforms((14, 0), "arm64")),
}


def supported_pythons() -> list[tuple[int, int]]:
    """As versões do Python que o ``requires-python`` do pyproject.toml admite (3.x)."""
    spec = SpecifierSet(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    )
    return [(3, minor) for minor in range(8, 20) if f"3.{minor}" in spec]


def installable_tags(python: tuple[int, int], platforms: list[str]) -> set:
    abi = f"cp{python[0]}{python[1]}"
    found = set(tags.cpython_tags(python, abis=[abi], platforms=platforms))
    return found | set(tags.compatible_tags(python, interpreter=abi, platforms=platforms))


def wheel_tags(name: str, pinned: str) -> list[frozenset]:
    """As etiquetas de cada wheel da versão ``pinned`` de ``name`` no índice (PEP 691, JSON)."""
    request = urllib.request.Request(
        f"{INDEX}/{canonicalize_name(name)}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        files = json.load(response)["files"]
    found = []
    for f in files:
        if f["filename"].endswith(".whl") and not f.get("yanked"):
            _, ver, _, wheel = parse_wheel_filename(f["filename"])
            if str(ver) == pinned:
                found.append(wheel)
    return found


@pytest.mark.timeout(240)
def test_every_pin_has_a_wheel_for_each_supported_python_and_platform():
    """Um aluno com Python 3.11–3.13, em Linux (x86_64 ou aarch64) ou macOS (Apple silicon),
    instala cada pacote fixado sem compilar nada (sem acesso ao índice, é pulado com o motivo)."""
    pythons = supported_pythons()
    assert pythons and pythons[0] == (3, 11), pythons
    missing = []
    for line in pyproject_pins().values():
        req = Requirement(line)
        try:
            wheels = wheel_tags(req.name, next(iter(req.specifier)).version)
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            pytest.skip(f"sem acesso ao índice de pacotes ({INDEX}): {err}")
        offered = set().union(*wheels) if wheels else set()
        for python in pythons:
            for where, platforms in STUDENT_PLATFORMS.items():
                if not offered & installable_tags(python, platforms):
                    missing.append(f"{line}: Python {python[0]}.{python[1]}, {where}")
    assert not missing, "sem wheel (o aluno teria de compilar):\n" + "\n".join(missing)
