"""As versões fixadas em pyproject.toml e environment.yml são as mesmas, e estão instaladas."""

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        lines += extra
    return {str(Requirement(line)).split("==")[0]: line for line in lines}


def conda_pins() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "python=3.11" in env["dependencies"]
    return {str(Requirement(line)).split("==")[0]: line for line in pip}


def test_every_dependency_is_pinned_exactly():
    for line in pyproject_pins().values():
        spec = Requirement(line).specifier
        assert len(spec) == 1 and next(iter(spec)).operator == "==", f"sem versão exata: {line}"


def test_environment_yml_matches_pyproject():
    py, conda = pyproject_pins(), conda_pins()
    assert set(py) == set(conda), f"pacotes diferentes: {set(py) ^ set(conda)}"
    for name in py:
        a, b = Requirement(py[name]), Requirement(conda[name])
        assert (a.specifier, a.extras) == (b.specifier, b.extras), (
            f"{name}: {py[name]} != {conda[name]}"
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
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]", (
        f"`import ray` carregou {out.stdout.strip()}: cada worker do Ray demora ~1 s a mais para "
        "subir (veja o comentário do jsonschema em pyproject.toml)."
    )
