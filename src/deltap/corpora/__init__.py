"""Corpus builders: API-symbol YAML, installed Python packages (``inspect``), Markdown/Docusaurus folders."""
