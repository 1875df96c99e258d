"""Configuração comum do pytest (testes unitários e notebooks via nbval).

Os testes rodam na escala ``smoke`` (dados locais, tamanhos mínimos), a menos que
``LABUTILS_SCALE`` já esteja definida. Com ``--nbval-current-env`` estas variáveis chegam
também aos kernels que executam os notebooks.
"""

import os

os.environ.setdefault("LABUTILS_SCALE", "smoke")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("RAY_AUTH_MODE", "token")
# Sem barra de progresso do tfds/Ray Data nos logs do CI.
os.environ.setdefault("TFDS_DISABLE_PROGRESS_BAR", "1")
