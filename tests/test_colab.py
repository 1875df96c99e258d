"""A primeira célula das lições e o que ela instala no Colab (rápido: nada roda de verdade; a
execução das lições com as versões do Colab é o ``make colab-check``, fora do ``make test``)."""

import ast
import contextlib
import io
import json
import os
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from labutils import colab
from tools import colab_links, make_student_notebook

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("0*.ipynb"))


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def setup_cell(path: Path) -> str:
    return "".join(next(c for c in cells(path) if c.get("id") == colab_links.SETUP_ID)["source"])


def test_installs_only_what_colab_lacks():
    have = colab.colab_versions()
    todo = colab.missing_requirements()
    names = {canonicalize_name(line.split("[")[0].split("==")[0]) for line in todo}
    assert {"ray", "optuna"} <= names, todo
    assert not names & set(have), f"o Colab já traz: {names & set(have)}"
    # o que o Colab fixa e não pode mudar (colabtools#5580) está preso nas restrições
    assert have.get("ipython") == "7.34.0"
    assert not colab.MAY_CHANGE & set(have)


def lesson_imports() -> set[str]:
    """Os módulos de topo que ``labutils/`` e as células das lições importam."""
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "labutils").rglob("*.py")]
    for nb in LESSONS:
        code = "\n".join("".join(c["source"]) for c in cells(nb) if c["cell_type"] == "code")
        sources.append("\n".join(ln for ln in code.splitlines() if ln.lstrip()[:1] not in "%!"))
    names = set()
    for node in (n for source in sources for n in ast.walk(ast.parse(source))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"labutils", "__future__"}


def test_every_package_the_lessons_import_is_on_colab_or_installed():
    """Tudo o que ``labutils/`` e as lições importam: o Colab traz, ou a célula instala."""
    dists = packages_distributions()
    covered = set(colab.colab_versions()) | {
        canonicalize_name(line.split("[")[0].split("==")[0])
        for line in colab.missing_requirements()
    }
    missing = {
        name: sorted(dists.get(name, [name]))
        for name in lesson_imports()
        if not {canonicalize_name(d) for d in dists.get(name, [name])} & covered
    }
    assert not missing, f"importados e nem no Colab nem instalados pela 1ª célula: {missing}"


def test_install_uses_the_constraints_and_skips_what_is_there(monkeypatch):
    calls = []
    monkeypatch.setattr(colab, "installed", lambda line: False)
    monkeypatch.setattr(colab, "needed_repairs", lambda: [])
    colab.install(run=lambda cmd, **kw: calls.append(cmd))
    (cmd,) = calls
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    assert str(colab.CONSTRAINTS) == cmd[cmd.index("-c") + 1]
    assert cmd[-len(colab.missing_requirements()) :] == colab.missing_requirements()
    calls.clear()
    monkeypatch.setattr(colab, "installed", lambda line: True)
    assert colab.install(run=lambda cmd, **kw: calls.append(cmd)) == [] and not calls


def test_repairs_change_a_colab_package_only_when_its_test_fails(monkeypatch):
    assert colab.broken("raise SystemExit(1)") and not colab.broken("pass")
    monkeypatch.setattr(colab, "installed", lambda line: line not in colab.REPAIRS)
    monkeypatch.setattr(colab, "broken", lambda test: False)
    assert colab.needed_repairs() == []
    monkeypatch.setattr(colab, "broken", lambda test: True)
    assert colab.needed_repairs() == list(colab.REPAIRS)
    calls = []
    monkeypatch.setattr(colab, "installed", lambda line: True)  # o Ray e o Optuna já estão
    monkeypatch.setattr(colab, "needed_repairs", lambda: list(colab.REPAIRS))
    colab.install(run=lambda cmd, **kw: calls.append(cmd))
    (cmd,) = calls
    assert (
        "--no-deps" in cmd and "-c" not in cmd and cmd[-len(colab.REPAIRS) :] == list(colab.REPAIRS)
    )


@contextlib.contextmanager
def restored_process_state():
    path, cwd, environ = list(sys.path), os.getcwd(), dict(os.environ)
    try:
        yield
    finally:
        sys.path[:] = path
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2] + p.stem[-5:])
def test_first_cell_does_nothing_off_colab(path, monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    out = io.StringIO()
    with restored_process_state():
        before = (list(sys.path), os.getcwd(), dict(os.environ))
        with contextlib.redirect_stdout(out):
            exec(setup_cell(path), {})
        assert (list(sys.path), os.getcwd(), dict(os.environ)) == before
    assert len(out.getvalue().strip().splitlines()) == 1, out.getvalue()


@pytest.mark.parametrize("path", [LESSONS[0], colab_links.SOLUTION], ids=["00", "07"])
def test_first_cell_on_colab_uses_the_clone_and_installs(path, tmp_path, monkeypatch):
    """Com o clone já na pasta de trabalho, a célula não clona: põe-no no sys.path, vai para
    notebooks/ e chama a instalação; só na lição 07 liga o tf_keras."""
    source = setup_cell(path)
    name = colab_links.REPO_PATTERN.match(colab_links.PLACEHOLDER_REPO)[0].split("/")[1]
    assert f'/{name}"' in source
    (tmp_path / name).symlink_to(ROOT, target_is_directory=True)
    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    installs = []
    monkeypatch.setattr(colab, "install", lambda: installs.append(1))
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail(f"clonou: {a}"))
    with restored_process_state():
        os.chdir(tmp_path)
        monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
        exec(source, {})
        assert Path.cwd() == (tmp_path / name / "notebooks").resolve()
        assert sys.path[0] == str(tmp_path / name)
        legacy = os.environ.get("TF_USE_LEGACY_KERAS")
        assert legacy == ("1" if path == colab_links.SOLUTION else None)
        # os processos filhos (workers do Ray, nós do `ray start`) também acham o labutils
        assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / name)
        exec(source, {})  # de novo, já dentro de notebooks/: o mesmo clone
        assert sys.path.count(str(tmp_path / name)) == 1
    assert installs == [1, 1]


def test_every_lesson_has_the_badge_and_the_cell_from_one_setting():
    settings = set()
    for path in LESSONS:
        first = cells(path)[:2]
        assert [c.get("id") for c in first] == [colab_links.BADGE_ID, colab_links.SETUP_ID], path
        badge = "".join(first[0]["source"])
        assert f"/notebooks/{path.name})" in badge, path
        repo, branch = _setting(setup_cell(path))
        settings.add((repo, branch))
        legacy = path.name.startswith("07")  # o tf_keras: só a 07
        assert setup_cell(path) == colab_links.setup_source(repo, branch, legacy), path
    assert len(settings) == 1, "lições com REPO/BRANCH diferentes: rode make colab-links"


def _setting(source: str) -> tuple[str, str]:
    line = next(ln for ln in source.splitlines() if ln.startswith("REPO, BRANCH = "))
    repo, branch = (part.strip(' "') for part in line.split("=")[1].split("#")[0].split(","))
    return repo, branch


def test_colab_links_is_idempotent_and_keeps_the_student_copy_in_sync(tmp_path, monkeypatch):
    solution = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
    copy = tmp_path / "notebooks" / solution.name
    copy.parent.mkdir()
    copy.write_text(solution.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(colab_links, "SOLUTION", copy)
    monkeypatch.setattr(colab_links, "ROOT", tmp_path)
    colab_links.main(["--repo", "prof/curso", "--branch", "aula", str(copy)])
    once = copy.read_text(encoding="utf-8")
    colab_links.main(["--repo", "prof/curso", "--branch", "aula", str(copy)])
    assert copy.read_text(encoding="utf-8") == once
    student = make_student_notebook.student_path(copy).read_text(encoding="utf-8")
    assert "blob/aula/notebooks/07_exercicio_multiworker_aluno.ipynb" in student
    assert "_solucao.ipynb" not in student
    ids = [c.get("id") for c in json.loads(once)["cells"]]
    assert ids.count(colab_links.SETUP_ID) == 1 and ids.count(colab_links.BADGE_ID) == 1


def test_doctor_on_colab_checks_the_lesson_packages_and_accepts_colab_versions():
    from importlib.metadata import version

    from packaging.requirements import Requirement

    from labutils import doctor

    on_colab = {colab.canonical(r.name) for r in doctor.checked_requirements(on_colab=True)}
    everywhere = {colab.canonical(r.name) for r in doctor.checked_requirements(on_colab=False)}
    assert {"ray", "tensorflow", "ipython"} <= on_colab < everywhere
    assert not on_colab & {"pytest", "nbval", "ruff", "playwright", "jupyterlab"}
    other = Requirement("numpy==1.0.0")  # uma versão que não é a instalada
    assert doctor.check_package(other).status == doctor.WARN
    colab_has = {"numpy": version("numpy")}
    assert doctor.check_package(other, colab_has).status == doctor.OK


def test_doctor_colab_rows_recommend_cpu_and_never_fail(monkeypatch):
    from labutils import doctor

    monkeypatch.setattr(colab, "changed_packages", lambda: [])
    smt = {"logical_cpus": 2, "physical_cores": 1, "memory_gb": 12.7}
    gpu = doctor.check_colab(runtime="GPU", here=smt, shm_bytes=64 * 2**20)
    status = {r.item: r.status for r in gpu}
    assert doctor.FAIL not in status.values()
    assert status["Colab: runtime"] == status["Colab: CPUs"] == doctor.WARN
    assert status["Colab: /dev/shm"] == doctor.WARN
    cpu = doctor.check_colab(runtime="CPU", here={**smt, "physical_cores": 2}, shm_bytes=2**32)
    status = {r.item: r.status for r in cpu}
    assert status["Colab: runtime"] == status["Colab: CPUs"] == status["Colab: /dev/shm"] == "✅"
    keep = next(r for r in cpu if "results/" in r.item)
    assert "LABUTILS_DATA_DIR" in keep.remedy and "LABUTILS_RESULTS_DIR" in keep.remedy
