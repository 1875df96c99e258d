"""Coleta dos notebooks pelo nbval.

O notebook do aluno (``*_aluno.ipynb``) para de propósito no primeiro TODO: o nbval não o
executa. Ele é testado em ``tests/test_exercise.py`` (gerado a partir da solução, e falha só com
a mensagem amigável de "ainda não terminado").
"""


def pytest_ignore_collect(collection_path, config):
    if collection_path.name.endswith("_aluno.ipynb"):
        return True
    return None
