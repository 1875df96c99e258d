"""As versões fixadas ficam num lugar só (pyproject.toml), exatas e instaladas; todo pacote que o
código importa está declarado, e o que ninguém importa diz por que fica."""

import ast
import json
import sys
import tomllib
from importlib.metadata import packages_distributions, version
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from labutils import system

ROOT = Path(__file__).resolve().parents[1]


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        lines += extra
    return {str(Requirement(line)).split("==")[0]: line for line in lines}


#: declarados sem import direto, cada um com o motivo (o comentário ao lado em pyproject.toml)
RUNTIME_ONLY = {
    "jupyterlab": "onde as lições rodam",
    "tf-keras": "o Keras 2 do TF_USE_LEGACY_KERAS=1 (lição 07)",
    "ipywidgets": "barras de progresso no JupyterLab",
    "jsonschema": "versão do Ray fixada abaixo da 4.25",
    "nbval": "plugin do pytest que executa os notebooks",
    "pytest-timeout": "plugin do pytest",
    "pytest-xdist": "plugin do pytest (make test roda com -n 2)",
    "ruff": "o lint (make lint)",
}


def test_every_dependency_is_pinned_exactly():
    for line in pyproject_pins().values():
        spec = Requirement(line).specifier
        assert len(spec) == 1 and next(iter(spec)).operator == "==", f"sem versão exata: {line}"


def test_environment_yml_installs_the_project_instead_of_copying_the_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert pip == ["-e .[test]"], (
        f"environment.yml deve só instalar o projeto (pip: ['-e .[test]']), tem {pip}: as versões "
        "ficam em pyproject.toml"
    )
    others = [
        d for d in env["dependencies"] if isinstance(d, str) and d not in ("python=3.11", "pip")
    ]
    assert not others, f"pacotes do conda fora do pyproject.toml: {others}"


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
    local = {"labutils", "tools", "processes", "conftest", "__future__"}
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
    unused = sorted(declared - imported - set(RUNTIME_ONLY))
    assert not unused, (
        f"fixados em pyproject.toml e que nada importa (tire-os ou diga por quê): {unused}"
    )


def test_installed_versions_match_the_pins():
    for line in pyproject_pins().values():
        req = Requirement(line)
        assert req.specifier.contains(version(req.name)), (
            f"{req.name} {version(req.name)} != {line}"
        )


def test_importing_ray_does_not_compile_iri_grammars():
    """Cada processo do Ray importa o jsonschema; o ``rfc3987_syntax`` (jsonschema >= 4.25) custa
    ~1 s de CPU por processo ao ser importado. Processo novo, como um worker do Ray."""
    code = (
        "import sys, ray; print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))"
    )
    out = system.run([sys.executable, "-c", code], timeout=120)
    assert out.stdout.strip() == "[]", (
        f"`import ray` carregou {out.stdout.strip()}: cada worker do Ray demora ~1 s a mais para "
        "subir (veja o comentário do jsonschema em pyproject.toml)."
    )
