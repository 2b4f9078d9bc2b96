"""An index directory on disk: the manifest (``manifest``), the store kinds it can name (``registry``) and opening
or creating one (``directory``). One layout for ``from_texts(path=...)`` and the command line."""
