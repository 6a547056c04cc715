"""Running the audit cases and writing their table."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..figures.tables import Table, fmt_sig
from ..seeds import derive_seed
from .bounds import AuditBound, threshold_audit
from .cases import AuditCase, draw
from .invocations import FitAudit, InvocationCase, run_fit

CONFIDENCE = 0.95
NOT_CLAIMED = "n/a"  # no pure-DP claim to audit
POWER_REPS = 200  # bootstrap replicates behind each row's power
# What a fit whose invocations were all left unsampled shows in the bound's place.
_NO_TEST = AuditBound("none", "D", 0, 0, 0, 0, 0.0, 1.0, 0.0, 0.0, CONFIDENCE)
# An invocation row's replicate re-audits every invocation of its fit (up to ~20): a quarter as many.
INVOCATION_POWER_SHARE = 4


@dataclass(frozen=True)
class AuditRow:
    """One audited case and its bounds."""

    case: AuditCase
    bound: AuditBound
    n_draws: int
    seconds: float
    power: float = float("nan")
    fit: FitAudit | None = None  # the invocations of an InvocationCase (their draws dropped)

    @property
    def exceeded(self) -> bool:
        return self.fit.exceeded if self.fit is not None else exceeds_claim(self.case, self.bound)

    @property
    def claimed_rho(self) -> float:
        """The claim the shown bound is set against: the case's, or the shown invocation's charge."""
        return self.case.rho if self.fit is None or self.fit.worst is None else self.fit.worst.charge

    @property
    def rho_lower(self) -> float:
        """The shown lower bound on ρ: the case's, or one copy's of the invocation closest to its charge."""
        if self.fit is None:
            return self.bound.rho
        return float("nan") if self.fit.worst is None else self.fit.worst.rho_lower

    @property
    def test(self) -> str:
        if self.fit is None:
            return self.bound.event + f" (likelier on {self.bound.likelier_on})"
        w, f = self.fit.worst, self.fit
        if w is None:
            return (f"no invocation sampled of {f.n_invocations}; charges add to {float(f.charges_sum):.6g} of "
                    f"ρ = {f.rho:g}" + (f"; UNPAID: {list(f.unpaid)}" if f.unpaid else ""))
        return (f"invocation {w.index + 1} of {f.n_invocations} ({w.mechanism}, {w.purpose!r}, shift {w.shift:.3g}, "
                f"{w.copies} cop{'y' if w.copies == 1 else 'ies'}): {w.bound.event} (likelier on "
                f"{w.bound.likelier_on}); {len(f.flagged())} of {len(f.audits)} sampled above their charge at "
                f"{100 * f.confidence:.3g}% each; charges add to {float(f.charges_sum):.6g} of ρ = {f.rho:g}"
                + (f"; UNPAID: {list(f.unpaid)}" if f.unpaid else ""))

    @property
    def unaudited(self) -> bool:
        """An invocation case of which no release was sampled: nothing was tested, so nothing is vouched for.

        A method whose releases bypass the recorded mechanisms (its own noise, or none) lands here.
        """
        return self.fit is not None and not self.fit.audits and not self.fit.exceeded

    @property
    def verdict(self) -> str:
        if self.unaudited:
            return "NOT AUDITED"
        if self.case.broken:
            return "caught" if self.exceeded else "NOT CAUGHT"
        return "VIOLATION" if self.exceeded else "no violation found"

    @property
    def ok(self) -> bool:
        """What the audit expects: broken controls caught, the project's mechanisms not."""
        return not self.unaudited and self.exceeded == self.case.broken


def exceeds_claim(case: AuditCase, bound: AuditBound) -> bool:
    """Whether a lower bound lies above the claimed ρ (or, for pure-DP claims, the claimed ε)."""
    return bound.rho > case.rho or (case.epsilon is not None and bound.epsilon > case.epsilon)


def audit_case(case: AuditCase, n_draws: int | None = None, *, base_seed: int = 0,
               confidence: float = CONFIDENCE, power_reps: int = POWER_REPS) -> AuditRow:
    """Draw ``n_draws`` (default ``case.draws``) releases on each of ``D`` and ``D'`` and bound the loss.

    ``power_reps`` bootstrap replicates estimate the row's power (0: not estimated, ``nan``).
    """
    n = case.draws if n_draws is None else int(n_draws)
    start = time.perf_counter()
    if isinstance(case, InvocationCase):
        fit = run_fit(case, n, base_seed=base_seed, confidence=confidence)
        seconds = time.perf_counter() - start
        reps = -(-power_reps // INVOCATION_POWER_SHARE)
        power = fit_power(case, fit, reps=reps, base_seed=base_seed) if power_reps else float("nan")
        # The draws stay here: a row travels back from a worker process without them.
        fit = replace(fit, audits=tuple(replace(a, samples=()) for a in fit.audits))
        shown = fit.worst.bound if fit.worst is not None else _NO_TEST
        return AuditRow(case, shown, n, seconds, power, fit)
    samples = [draw(case, side, n, base_seed=base_seed) for side in (0, 1)]
    bound = threshold_audit(*samples, metric=case.metric, confidence=confidence)
    seconds = time.perf_counter() - start
    power = bootstrap_power(case, samples, confidence=confidence, reps=power_reps, base_seed=base_seed) \
        if power_reps else float("nan")
    return AuditRow(case, bound, n, seconds, power)


def bootstrap_power(case: AuditCase, samples, *, confidence: float = CONFIDENCE, reps: int = POWER_REPS,
                    base_seed: int = 0) -> float:
    """Share of audits on bootstrap resamples of the draws that reach the expected verdict.

    For a broken control this estimates the audit's power at this number of draws (how often a
    rerun with fresh seeds would catch it); for a correct mechanism, how often it would find no
    violation. Resampling (with replacement, each data set's draws separately) approximates
    fresh draws; it adds no runs of the mechanism.
    """
    rng = np.random.default_rng(derive_seed("audit-power", int(base_seed), case.name))
    hits = 0
    for _ in range(reps):
        resampled = [s[rng.integers(s.size, size=s.size)] for s in samples]
        hits += exceeds_claim(case, threshold_audit(*resampled, metric=case.metric, confidence=confidence)) \
            == case.broken
    return hits / reps


def fit_power(case: InvocationCase, fit: FitAudit, *, reps: int, base_seed: int = 0) -> float:
    """:func:`bootstrap_power` of an invocation audit: every sampled invocation resampled, the fit's verdict again.

    Invocations are re-audited from the one closest to its charge down, and a replicate stops at
    the first one above its charge (its verdict is then known).
    """
    rng = np.random.default_rng(derive_seed("audit-power", int(base_seed), case.name))
    order = sorted(fit.audits, key=lambda a: -a.ratio)
    hits = 0
    for _ in range(reps):
        exceeded = fit.over_budget
        for a in order:
            if exceeded:
                break
            resampled = [s[rng.integers(s.size, size=s.size)] for s in a.samples]
            exceeded = a.exceeds(threshold_audit(*resampled, metric="rho", confidence=fit.confidence))
        hits += exceeded == case.broken
    return hits / reps


def audit_table(rows: list[AuditRow]) -> Table:
    """The audit as a :class:`~paceggm.bench.figures.tables.Table` (text cells and tidy numbers)."""
    conf = rows[0].bound.confidence if rows else CONFIDENCE
    level = f"{100 * conf:g}%"
    text = pd.DataFrame(
        [[r.case.neighbours, r.case.statistic, f"{r.n_draws:,}", r.test,
          fmt_sig(r.claimed_rho), fmt_sig(r.rho_lower),
          fmt_sig(r.case.epsilon) if r.case.epsilon is not None else NOT_CLAIMED,
          fmt_sig(r.bound.epsilon) if r.case.epsilon is not None else NOT_CLAIMED, r.verdict,
          f"{r.power:.2f}" if np.isfinite(r.power) else "not estimated", f"{r.seconds:.0f}"]
         for r in rows],
        index=[r.case.mechanism for r in rows],
        columns=["neighbours D / D'", "statistic s", "draws per data set", "test",
                 "claimed ρ", f"ρ lower bound ({level})", "claimed ε", f"ε lower bound ({level})", "result",
                 "power (bootstrap)", "seconds"],
    )
    text.index.name = "mechanism"
    data = pd.DataFrame([{
        "case": r.case.name, "broken": r.case.broken, "draws": r.n_draws, "claimed_rho": r.claimed_rho,
        "rho_lower": r.rho_lower, "claimed_epsilon": r.case.epsilon, "epsilon_lower": r.bound.epsilon,
        "event": r.bound.event, "likelier_on": r.bound.likelier_on, "k_p": r.bound.k_p, "n_p": r.bound.n_p,
        "k_q": r.bound.k_q, "n_q": r.bound.n_q, "p_lower": r.bound.p_lower, "q_upper": r.bound.q_upper,
        "confidence": r.bound.confidence, "exceeded": r.exceeded, "ok": r.ok, "seconds": r.seconds,
        "power": r.power, "invocations": r.fit.n_invocations if r.fit else None,
        "invocations_sampled": len(r.fit.audits) if r.fit else None,
        "invocations_flagged": len(r.fit.flagged()) if r.fit else None,
        "charges_sum": float(r.fit.charges_sum) if r.fit else None,
    } for r in rows])
    return Table("audit",
                 f"Empirical privacy audit: {level} lower bounds on the privacy loss of each mechanism "
                 "on a worst-case pair of neighbouring data sets, against the claimed cost.", text, data)
