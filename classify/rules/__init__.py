"""The classification rules: facts about one semaphore in, a verdict out.

Pure functions, no I/O.  The verdict is one of the pools of the 2005 Generic
Mutex Subsystem proposal -- ``mutex``, ``completion``, ``counting`` -- or
``unknown``; it carries the reasons, the file:line evidence, the name of the rule
that decided, and for ``unknown`` what would settle the case.  Precision comes
before coverage: whatever is not proven stays ``unknown``.

``model`` holds the facts and the verdict, ``certain``, ``event`` and ``lock`` the
rule families, ``table`` the order they run in.
"""

from classify.rules.model import (CLASSES, COMPLETION, COUNTING, MUTEX, UNKNOWN, Case,
                                  EscapeFact, Followed, InitFact, OpFact, SemFacts, Verdict)
from classify.rules.table import RULES, classify, rule_name

__all__ = ["CLASSES", "COMPLETION", "COUNTING", "MUTEX", "UNKNOWN", "RULES", "Case",
           "EscapeFact", "Followed", "InitFact", "OpFact", "SemFacts", "Verdict", "classify",
           "rule_name"]
