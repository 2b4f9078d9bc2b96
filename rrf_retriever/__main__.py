"""``python -m rrf_retriever``: the same command line as ``rrf-retriever``."""

from rrf_retriever.apps.cli import main

if __name__ == "__main__":
    main()
