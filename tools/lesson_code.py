"""O código que uma lição define nas suas células, para o ``make bench`` e os testes.

Como no livro d2l, a primeira linha ``# @save`` marca uma célula de código que só define coisas
(imports, constantes, funções, classes): a implementação é a que o aluno lê e edita na lição, e
quem a reaproveita fora do notebook a carrega daqui, sem uma segunda cópia no ``labutils``.

O que as lições seguintes usam (da lição 02, o treino de uma configuração, o limite do speedup
e a ordem; da 05, o pipeline e o modelo) vira, como no pacote do d2l, um módulo do ``labutils``
gerado das células (:data:`EXPORTS`, ``make lesson-code``); um teste confere que está em dia.

``load("02_busca_hiperparametros")`` executa essas células, na ordem do notebook, num módulo
novo. O módulo não entra em ``sys.modules``: o cloudpickle do Ray envia as funções e classes dele
por valor, como envia as definidas no kernel do notebook.
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


def write_modules() -> list[Path]:
    """(Re)escreve cada módulo de :data:`EXPORTS`; devolve os que mudaram."""
    changed = []
    for notebook, module in EXPORTS.items():
        path = NOTEBOOKS.parent / module
        text = module_text(notebook)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":
    for path in write_modules():
        print(f"gerado: {path.relative_to(NOTEBOOKS.parent)}")
