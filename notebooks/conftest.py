"""Coleta dos notebooks pelo nbval.

- O notebook do aluno (``*_aluno.ipynb``) para de propósito no primeiro TODO: o nbval não o
  executa. Ele é testado em ``tests/test_exercise.py`` (gerado a partir da solução, e falha só
  com a mensagem amigável de "ainda não terminado").
- "Run All" duas vezes: com ``LABUTILS_NBVAL_RERUN=1`` (o ``make test`` liga), cada notebook é
  executado do início ao fim num kernel novo e, logo depois, **de novo no mesmo kernel** — como
  um aluno que roda tudo outra vez. Os itens da segunda passada se chamam ``Rerun N``.
"""

import os


def pytest_ignore_collect(collection_path, config):
    if collection_path.name.endswith("_aluno.ipynb"):
        return True
    return None


def pytest_collection_modifyitems(session, config, items):
    if os.environ.get("LABUTILS_NBVAL_RERUN") != "1":
        return
    from nbval.plugin import IPyNbCell

    result, current = [], []

    def flush():
        if current:
            parent = current[0].parent
            rerun = [
                IPyNbCell.from_parent(
                    parent,
                    name=f"Rerun {item.cell_num}",
                    cell_num=item.cell_num,
                    cell=item.cell,
                    options=item.options,
                )
                for item in current
            ]
            result.extend(current + rerun)
            current.clear()

    for item in items:
        if isinstance(item, IPyNbCell):
            if current and item.parent is not current[0].parent:
                flush()
            current.append(item)
        else:
            flush()
            result.append(item)
    flush()
    items[:] = result
