"""``tools/lesson_code.py``: o código das células ``# @save`` de uma lição, fora do notebook."""

from __future__ import annotations

import sys

import nbformat
import pytest
from processes import run_python
from ray import cloudpickle  # o que o Ray usa para enviar funções aos workers

from tools import lesson_code


def test_functions_travel_by_value_to_a_process_that_never_read_the_notebook(tmp_path):
    """Como o Ray as envia aos workers: fora de ``sys.modules``, o cloudpickle leva o código."""
    split_trees = lesson_code.load("02_busca_hiperparametros").split_trees
    assert split_trees.__module__ not in sys.modules
    pickled = tmp_path / "split_trees.pkl"
    pickled.write_bytes(cloudpickle.dumps(split_trees))
    done = run_python(
        f"import pickle; print(pickle.loads(open({str(pickled)!r}, 'rb').read())(7, 2))",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[(0, 4), (4, 3)]"


def test_a_notebook_without_saved_cells_says_so(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    path = tmp_path / "sem_save.ipynb"
    nbformat.write(nb, path)
    assert lesson_code.saved_cells(path) == []
    with pytest.raises(ValueError, match="não tem células # @save"):
        lesson_code.load(str(path))


def test_saved_cells_run_as_in_the_kernel_without_the_future_imports_of_the_loader(tmp_path):
    """Sem o ``from __future__ import annotations`` do carregador, um ``@dataclass`` funciona."""
    cell = (
        "# @save\nfrom dataclasses import dataclass\n\n\n@dataclass(frozen=True)\n"
        "class Pair:\n    a: int\n    b: tuple[str, ...]\n"
    )
    path = tmp_path / "com_dataclass.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)]), path)
    lesson = lesson_code.load(str(path))
    assert lesson.Pair(1, ("x",)).b == ("x",)
    assert lesson.Pair.__annotations__["a"] is int


@pytest.mark.parametrize(("notebook", "module"), lesson_code.EXPORTS.items())
def test_the_generated_module_is_current(notebook, module):
    """O que as lições seguintes importam é o que o aluno leu (``make lesson-code``)."""
    path = lesson_code.NOTEBOOKS.parent / module
    assert path.read_text(encoding="utf-8") == lesson_code.module_text(notebook), (
        f"{module} está desatualizado em relação às células # @save de {notebook}: "
        "rode `make lesson-code`"
    )


def test_the_generated_module_runs_the_cells_of_the_lesson(tmp_path, monkeypatch):
    cell = "# @save\nLIMIT = 3\n\n\ndef twice(x):\n    return 2 * x\n"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbformat.write(nb, tmp_path / "99_licao.ipynb")
    monkeypatch.setattr(lesson_code, "NOTEBOOKS", tmp_path)
    text = lesson_code.module_text("99_licao")
    namespace: dict = {}
    exec(compile(text, "gerado.py", "exec"), namespace)
    assert namespace["twice"](namespace["LIMIT"]) == 6
