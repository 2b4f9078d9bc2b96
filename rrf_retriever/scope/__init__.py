"""The scope of a search: the filter tree and its reference semantics (``tree``), the operator language's parser
(``parse``) and the command line's ``key=v1,v2`` syntax (``cli_syntax``). Nothing is re-exported: import from the
module that defines a name."""
