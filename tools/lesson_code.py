"""O código que uma lição define nas suas células, para o ``make bench`` e os testes.

Como no livro d2l, a primeira linha ``# @save`` marca uma célula de código que só define coisas
(imports, constantes, funções, classes): a implementação é a que o aluno lê e edita na lição, e
quem a reaproveita fora do notebook a carrega daqui, sem uma segunda cópia no ``labutils``.

A exceção é o que as lições seguintes usam (da lição 02, o treino de uma configuração, o
limite do speedup e a ordem, nas 03 e 04; da 05, o pipeline e o modelo, nos workers das
06 e 07): como o pacote do d2l, o ``labutils`` guarda uma cópia (:data:`COPIES`), e
:func:`copy_mismatches` aponta cada definição que se afastou da célula (um teste a chama).

``load("02_busca_hiperparametros")`` executa essas células, na ordem do notebook, num módulo
novo. O módulo não entra em ``sys.modules``: o cloudpickle do Ray envia as funções e classes dele
por valor, como envia as definidas no kernel do notebook.
"""

from __future__ import annotations

import ast
import json
import types
from functools import cache
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
MARK = "# @save"  # o ``#@save`` do d2l, como o ``ruff format`` o escreve


def saved_cells(notebook: str | Path) -> list[str]:
    """O código das células ``# @save`` de ``notebooks/<notebook>.ipynb`` (ou de um caminho)."""
    path = Path(notebook) if Path(notebook).suffix == ".ipynb" else NOTEBOOKS / f"{notebook}.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return [s for s in sources if s.lstrip().startswith(MARK)]


@cache
def load(notebook: str) -> types.ModuleType:
    """Um módulo com o que as células ``# @save`` da lição definem (carregado uma vez);
    ``notebook`` como em :func:`saved_cells`."""
    sources = saved_cells(notebook)
    if not sources:
        raise ValueError(f"O notebook {notebook} não tem células {MARK}.")
    name = Path(notebook).stem
    module = types.ModuleType(f"licao_{name}", f"As células {MARK} de {name}.ipynb.")
    for number, source in enumerate(sources, 1):
        # dont_inherit: sem o ``from __future__ import annotations`` deste arquivo, as anotações
        # são avaliadas como no kernel (strings quebrariam um @dataclass fora de sys.modules)
        where = f"<{name}.ipynb, célula {MARK} nº {number}>"
        code = compile(source, where, "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 (é o código da própria lição)
    return module


#: as lições de que o ``labutils`` copia definições ``# @save``, e o arquivo da cópia
COPIES = {
    "02_busca_hiperparametros": "labutils/search.py",
    "05_tensorflow_mirrored": "labutils/tf.py",
}


def _definitions(source: str) -> dict[str, str]:
    """Nome → código de cada função, classe e constante de ``source`` (os imports não contam)."""
    tree = ast.parse(source)
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = ast.get_source_segment(source, node)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = ast.get_source_segment(source, node)
    return found


def copy_mismatches(notebook: str, module: str | Path) -> list[str]:
    """Cada definição das células ``# @save`` de ``notebook`` que ``module`` (um ``.py``) também
    tem deve ser igual, letra por letra: uma frase por diferença; vazia se as cópias batem."""
    path = Path(module)
    if not path.is_absolute():
        path = NOTEBOOKS.parent / path
    copy = _definitions(path.read_text(encoding="utf-8"))
    lesson = {}
    for source in saved_cells(notebook):
        lesson.update(_definitions(source))
    if not lesson.keys() & copy.keys():
        return [f"{module} não copia nada das células {MARK} de {notebook}"]
    return [
        f"{name}: a célula de {notebook} e {module} diferem"
        for name, code in lesson.items()
        if name in copy and copy[name] != code
    ]
