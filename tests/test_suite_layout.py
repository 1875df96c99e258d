"""Como o ``make test`` reparte os arquivos entre os processos do pytest-xdist."""

import ast
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
from xdist.remote import Producer

ROOT = Path(__file__).resolve().parents[1]


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _uses(path: Path, fixture: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        arg.arg == fixture
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for arg in node.args.args
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "fixture, unit", [("local_cluster", "SHARED_CLUSTER_FILES"), ("local_ray", "SHARED_RAY_FILES")]
)
def test_every_file_of_a_shared_resource_runs_in_one_unit(fixture, unit):
    conftest = _root_conftest()
    users = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "tests").glob("test_*.py")
        if _uses(p, fixture)
    )
    assert users == sorted(getattr(conftest, unit)), f"o {fixture} subiria mais de uma vez"

    options = {"dist": "loadfile", "tx": ["2*popen"]}
    scheduler = conftest.pytest_xdist_make_scheduler(
        SimpleNamespace(getvalue=options.get), Producer("teste", enabled=False)
    )
    scopes = {scheduler._split_scope(f"{path}::test_x") for path in users}
    assert len(scopes) == 1, scopes
    others = {scheduler._split_scope(f"tests/test_{name}.py::test_x") for name in "ab"}
    assert others == {"tests/test_a.py", "tests/test_b.py"}, "os outros, um por arquivo"
    options["dist"] = "load"
    assert conftest.pytest_xdist_make_scheduler(SimpleNamespace(getvalue=options.get), None) is None
