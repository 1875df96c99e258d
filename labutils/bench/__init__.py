"""Benchmark do laboratório: mede, lado a lado e numa só execução, cada abordagem paralela.

Não é um teste de velocidade: nada aqui falha por a máquina ser lenta. Cada medida é repetida,
e o relatório traz mediana e dispersão, o speedup sobre a linha de base e, onde existe, a razão
para o limite que a máquina permite. Uso::

    python -m labutils.bench --scale full --repeats 3     # ou: make bench
"""
