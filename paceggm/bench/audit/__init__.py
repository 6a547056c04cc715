"""Empirical privacy audit: confidence lower bounds on the privacy loss of the project's mechanisms.

``python -m paceggm.bench.audit`` (``make audit``) runs every case of
:data:`~paceggm.bench.audit.cases.CASES` — the Gaussian and exponential
mechanisms, a whole PACE-GGM fit and AdaptiveCov's choice of clipping radius,
each on a worst-case pair of neighbouring data sets, plus deliberately broken
controls — and, for one fit of each registered method, every mechanism
invocation on its own (:mod:`~paceggm.bench.audit.invocations`), with a
control at twice its claim; it writes ``figures/tables/audit.{md,tex}``.

A lower bound below the claim is evidence, not proof: it says that this test on
these neighbours found no violation. A bound above the claim disproves the
claim (at the stated confidence).
"""

from .bounds import AuditBound, clopper_pearson, epsilon_lower_bound, rho_lower_bound, threshold_audit
from .cases import CASES, AuditCase, draw
from .invocations import InvocationCase
from .report import AuditRow, audit_case, audit_table, exceeds_claim

__all__ = [
    "CASES", "AuditBound", "AuditCase", "AuditRow", "InvocationCase", "audit_case", "audit_table", "clopper_pearson",
    "draw", "epsilon_lower_bound", "exceeds_claim", "rho_lower_bound", "threshold_audit",
]
