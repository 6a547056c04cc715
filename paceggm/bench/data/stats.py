"""The publication's data-set statistics and the table comparing ours with its values.

All statistics are those of ``Σ = XᵀX / n`` of the preprocessed (centred) matrix:
mean and max ``|r|`` over the off-diagonal Pearson correlations, ``e_off = ‖Σ_off‖_F² / ‖Σ‖_F²``,
effective rank ``exp(−Σ p_i log p_i)`` with ``p_i = ν_i / Σν`` over the eigenvalues of ``Σ``.
All but ``max_abs`` are invariant to a global rescaling, so ``paper`` and ``strict`` share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

STAT_FIELDS = ("mean_abs_r", "max_abs_r", "e_off", "eff_rank")
# The publication prints three decimals (one for eff. rank): a row "matches" within these.
MATCH_TOL = {"mean_abs_r": 0.005, "max_abs_r": 0.005, "e_off": 0.005, "eff_rank": 0.1}


@dataclass(frozen=True)
class DatasetStatistics:
    n: int
    d: int
    mean_abs_r: float
    max_abs_r: float
    e_off: float
    eff_rank: float
    max_abs: float


def dataset_statistics(X: np.ndarray) -> DatasetStatistics:
    """Statistics of the second-moment matrix ``XᵀX/n`` (the covariance, for centred ``X``)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 2:
        raise ValueError(f"need an n x d matrix with n >= 2 and d >= 2, got shape {X.shape}")
    n, d = X.shape
    sigma = X.T @ X / n
    sd = np.sqrt(np.diag(sigma))
    if np.any(sd == 0):
        raise ValueError("a column is identically zero: correlations are undefined")
    corr = sigma / np.outer(sd, sd)
    r = np.abs(corr[np.triu_indices(d, 1)])
    total = float(np.sum(sigma**2))
    off = total - float(np.sum(np.diag(sigma) ** 2))
    nu = np.clip(np.linalg.eigvalsh(sigma), 0.0, None)  # tiny negative round-off carries no mass
    p = nu / nu.sum()
    p = p[p > 0]
    return DatasetStatistics(
        n=n, d=d, mean_abs_r=float(r.mean()), max_abs_r=float(r.max()), e_off=off / total,
        eff_rank=float(np.exp(-np.sum(p * np.log(p)))), max_abs=float(np.abs(X).max()),
    )


@dataclass(frozen=True)
class TableRow:
    name: str
    ours: DatasetStatistics | None
    published: dict | None
    note: str
    status: str = "ok"  # or the reason the data set could not be loaded

    def mismatches(self) -> list[str]:
        """Fields where ours differs from the publication beyond its printed precision."""
        if self.ours is None or not self.published:
            return []
        bad = [k for k in ("n", "d") if getattr(self.ours, k) != int(self.published[k])]
        bad += [k for k in STAT_FIELDS if abs(getattr(self.ours, k) - float(self.published[k])) > MATCH_TOL[k]]
        return bad


_HEADERS = ("data set", "n", "d", "mean abs r", "max abs r", "e_off", "eff. rank", "max abs x", "matches")
_DIGITS = {"mean_abs_r": 3, "max_abs_r": 3, "e_off": 3, "eff_rank": 1}


def _cells(row: TableRow, *, latex: bool) -> list[str]:
    dash = "--" if latex else "—"
    name = row.name.replace("_", r"\_") if latex else row.name
    if row.ours is None:
        return [name] + [dash] * 7 + [row.status]
    pub = row.published or {}
    cells = [name]
    for key in ("n", "d"):
        ours = getattr(row.ours, key)
        if key in pub:
            diff = ours - int(pub[key])
            cells.append(f"{ours:,} / {int(pub[key]):,} ({diff:+,})")
        else:
            cells.append(f"{ours:,}")
    for key in STAT_FIELDS:
        k = _DIGITS[key]
        ours = getattr(row.ours, key)
        if key in pub:
            diff = round(ours - float(pub[key]), k) + 0.0  # + 0.0: no "-0.000"
            cells.append(f"{ours:.{k}f} / {float(pub[key]):.{k}f} ({diff:+.{k}f})")
        else:
            cells.append(f"{ours:.{k}f}")
    cells.append(f"{row.ours.max_abs:.3f}")
    bad = row.mismatches()
    cells.append("yes" if not bad and pub else ("no: " + ", ".join(bad) if pub else dash))
    if latex:
        cells = [c.replace("_", r"\_").replace(",", "{,}") if i else c for i, c in enumerate(cells)]
    return cells


def markdown_table(rows: list[TableRow], *, preprocessing: str) -> str:
    lines = [
        f"Data sets after `{preprocessing}` preprocessing. Each cell: ours / published (difference).",
        "max abs x is the largest |x| after preprocessing (the publication declares B = 1 and does not report it).",
        "`matches`: n and d equal, statistics within 0.005 (eff. rank within 0.1).",
        "",
        "| " + " | ".join(_HEADERS) + " |",
        "|" + "|".join(["---"] + ["---:"] * 7 + ["---"]) + "|",
    ]
    lines += ["| " + " | ".join(_cells(r, latex=False)) + " |" for r in rows]
    notes = [r for r in rows if r.ours is not None and (r.mismatches() or not r.published)]
    if notes:
        lines += ["", "Rows that do not match the publication — the rule used and why:", ""]
        lines += [f"- **{r.name}**: {r.note}" for r in notes]
    return "\n".join(lines) + "\n"


def latex_table(rows: list[TableRow], *, preprocessing: str) -> str:
    head = ["data set", "$n$", "$d$", r"mean $|r|$", r"max $|r|$", r"$e_{\mathrm{off}}$",
            "eff.\\ rank", r"max $|x|$", "match"]
    lines = [
        "% Generated by `python -m paceggm.bench.data stats`; do not edit.",
        r"\begin{table}[t]",
        r"\centering\small\setlength{\tabcolsep}{3pt}",
        rf"\caption{{Data sets after \texttt{{{preprocessing}}} preprocessing: ours / published (difference).}}",
        r"\label{tab:datasets}",
        r"\begin{tabular}{l" + "r" * 7 + "l}",
        r"\toprule",
        " & ".join(head) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(_cells(r, latex=True)) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_tables(rows: list[TableRow], out_dir: Path, *, preprocessing: str, stem: str = "datasets") -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, tex = out_dir / f"{stem}.md", out_dir / f"{stem}.tex"
    md.write_text(markdown_table(rows, preprocessing=preprocessing), encoding="utf-8")
    tex.write_text(latex_table(rows, preprocessing=preprocessing), encoding="utf-8")
    return [md, tex]
