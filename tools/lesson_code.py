"""O código que uma lição define nas suas células ``# @save``, fora do notebook.

Como no livro d2l, a primeira linha ``# @save`` marca uma célula que só define coisas (imports,
constantes, funções, classes). :func:`load` executa essas células, na ordem, num módulo novo, fora
de ``sys.modules`` (o cloudpickle do Ray envia as funções dele por valor, como as do kernel). O que
as lições seguintes importam vira um módulo gerado do ``labutils`` (:data:`EXPORTS`, ``make
lesson-code``; um teste confere que está em dia).
"""

from __future__ import annotations

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


#: as lições cujas células ``# @save`` o ``labutils`` publica, e o módulo gerado de cada uma (o
#: que as lições seguintes, o ``labutils`` e as ferramentas importam)
EXPORTS = {
    "02_busca_hiperparametros": "labutils/lesson02.py",
    "05_tensorflow_mirrored": "labutils/lesson05.py",
}


def module_text(notebook: str) -> str:
    """O texto do módulo gerado das células ``# @save`` de ``notebook``, na ordem da lição."""
    header = (
        f'"""O código das células ``# @save`` de ``notebooks/{notebook}.ipynb``, na ordem da '
        "lição.\n\nGerado por ``make lesson-code`` (``tools/lesson_code.py``): não edite aqui; "
        'edite a lição e gere de novo.\n"""\n\n'
    )
    return header + "\n\n".join(s.rstrip() + "\n" for s in saved_cells(notebook))


if __name__ == "__main__":  # make lesson-code: (re)escreve os módulos de EXPORTS que mudaram
    for notebook, module in EXPORTS.items():
        path, text = NOTEBOOKS.parent / module, module_text(notebook)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"gerado: {module}")
