"""Census: every struct semaphore declaration and every semaphore API call of a tree.

The census is grep based on purpose: it does not depend on spatch parsing a file,
so it is the completeness baseline that the Coccinelle facts are checked against.
It also gives every semaphore its identity:

* ``path:name`` for a global, a static or a local (``path`` relative to the tree),
* ``path:struct_tag.member`` for a struct member (``path`` = the file declaring
  the struct; one member is one semaphore wherever it is used).

Declarations through pointers (``struct semaphore *``) are recorded as pointers:
they are not semaphores of their own, and the semaphores they point to are found
through the "address handed to other code" facts.

The stages, one module each: ``prefilter`` (the files that can matter), ``cscan``
(a small C scanner), ``scan`` (one file's declarations and calls), ``resolver``
(which semaphore a call's argument names), ``counts`` (the value of an initial
count), ``take`` (the census of a tree).  This module re-exports their API.
"""

from classify.census.counts import count_value, eval_count
from classify.census.cscan import clean_source
from classify.census.model import ACQUIRE, OPS, Census, Decl, Op, subsystem
from classify.census.prefilter import candidate_files
from classify.census.resolver import Resolver, resolve_address
from classify.census.scan import scan_file
from classify.census.take import take_census

__all__ = ["ACQUIRE", "OPS", "Census", "Decl", "Op", "Resolver", "candidate_files",
           "clean_source", "count_value", "eval_count", "resolve_address", "scan_file",
           "subsystem", "take_census"]
