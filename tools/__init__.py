"""Ferramentas de quem mantém o curso (não fazem parte do pacote ``labutils``)."""
