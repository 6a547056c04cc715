"""Tables: measured entries, runtime, best (α, β); written as Markdown and LaTeX.

Each builder returns a :class:`Table` whose ``data`` holds the numbers (for
tests and further use) and whose ``text`` holds the formatted cells. A cell
without ok trials is ``—`` (and listed in the report), never a made-up value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from paceggm.bench.summary import runtime_metric, trial_stats

from . import style
from .results import datasets_by_d, dims

MISSING = "—"


@dataclass
class Table:
    """A formatted table plus the numbers behind it."""

    name: str
    caption: str
    text: pd.DataFrame  # formatted strings; the index is the first column
    data: pd.DataFrame  # the numbers (tidy)


def rho_label(rho: float) -> str:
    return f"ρ={rho:g}"


def fmt_sig(x: float, digits: int = 3) -> str:
    """``digits`` significant digits, no exponent for ordinary magnitudes."""
    if x is None or not np.isfinite(x):
        return MISSING
    if x == 0:
        return "0"
    mag = int(np.floor(np.log10(abs(x))))
    if -4 <= mag < 6:
        return f"{x:.{max(digits - 1 - mag, 0)}f}"
    return f"{x:.{digits - 1}e}"


def dataset_row_label(ds: str, d: dict) -> str:
    return f"{ds} (d={d[ds]})" if ds in d else ds


def measurements_table(df: pd.DataFrame) -> Table:
    """Mean number of measured entries per trial: ``d + off-diagonal`` per data set and ρ.

    ``df`` holds the PACE-GGM default variant's rows. The off-diagonal count is
    the mean of ``n_measured_offdiag`` over ok trials (one decimal); ``d`` is
    the number of diagonal entries, all measured at initialisation.
    """
    s = trial_stats(df, "n_measured_offdiag", by=("dataset", "rho"))
    diag = trial_stats(df, "n_measured_diag", by=("dataset", "rho"))["mean"]
    order = datasets_by_d(df)
    rhos = sorted(df["rho"].unique())
    d = dims(df)
    text = pd.DataFrame(MISSING, index=[dataset_row_label(x, d) for x in order],
                        columns=[rho_label(r) for r in rhos])
    text.index.name = "data set"
    for (ds, rho), row in s.iterrows():
        nd = diag.get((ds, rho), np.nan)
        nd_text = f"{nd:.0f}" if np.isfinite(nd) and float(nd).is_integer() else fmt_sig(nd)
        text.loc[dataset_row_label(ds, d), rho_label(rho)] = f"{nd_text} + {row['mean']:.1f}"
    data = s.reset_index().rename(columns={"mean": "offdiag_mean"})
    data["diag_mean"] = [diag.get((a, b), np.nan) for a, b in zip(data["dataset"], data["rho"])]
    return Table("measurements",
                 "Mean number of entries PACE-GGM measures per trial: d diagonal + mean "
                 "distinct off-diagonal entries.", text, data)


def runtime_table(df: pd.DataFrame, metric: str | None = None) -> Table:
    """Mean time per trial ± standard error, per data set (and variant) and ρ.

    ``metric`` None: the fit's CPU seconds where every ok row has them (the caption says so),
    else its wall seconds (:func:`~paceggm.bench.summary.runtime_metric`).
    """
    cpu = metric is None and runtime_metric(df)[1] == "CPU"
    metric = "cpu_time" if cpu else metric or "wall_time"
    s = trial_stats(df, metric, by=("dataset", "variant", "rho"))
    order = datasets_by_d(df)
    looks = style.variant_styles(df)
    variants = style.variant_order(df["variant"].unique(), looks)
    rhos = sorted(df["rho"].unique())
    d = dims(df)
    several = len(variants) > 1
    rows = [(ds, v) for ds in order for v in variants
            if ((df["dataset"] == ds) & (df["variant"] == v)).any()]
    labels = [dataset_row_label(ds, d) + (f", {style.look(v, looks).label}" if several else "")
              for ds, v in rows]
    text = pd.DataFrame(MISSING, index=labels, columns=[rho_label(r) for r in rhos])
    text.index.name = "data set" + (", method" if several else "")
    for (ds, v), label in zip(rows, labels):
        for rho in rhos:
            if (ds, v, rho) in s.index:
                st = s.loc[(ds, v, rho)]
                sem = fmt_sig(st["sem"], 2) if np.isfinite(st["sem"]) else "n/a"
                text.loc[label, rho_label(rho)] = f"{fmt_sig(st['mean'])} ± {sem}"
    what = ("CPU seconds of the fit per trial (user + system, as each cell recorded them; wall seconds move with "
            "the machine's other load)" if cpu else "Time per trial in seconds")
    return Table("runtime", f"{what}, mean ± standard error over trials (n/a: a single ok trial){_load_words(df)}.",
                 text, s.reset_index())


def _load_words(df: pd.DataFrame) -> str:
    """``; one-minute load at the fits' start: median 2.1, 1.9–3.4`` where the rows recorded it."""
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    load = pd.to_numeric(ok.get("load_start", pd.Series(dtype=float)), errors="coerce").dropna()
    if load.empty:
        return ""
    return (f"; the machine's one-minute load at the fits' start: median {load.median():.2f}, "
            f"{load.min():.2f}–{load.max():.2f}")


def _alpha_beta(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with their ``p_alpha``, ``p_beta`` parameter columns as ``alpha``, ``beta``."""
    out = df.rename(columns={"p_alpha": "alpha", "p_beta": "beta"})
    if not {"alpha", "beta"} <= set(out.columns):
        raise ValueError("PACE-GGM rows without p_alpha/p_beta columns")
    if out[["alpha", "beta"]].isna().any().any():
        missing = out["alpha"].isna() | out["beta"].isna()
        raise ValueError(f"{int(missing.sum())} PACE-GGM rows without alpha/beta; "
                         f"variants {sorted(out.loc[missing, 'variant'].unique())}")
    return out


def best_hyperparameters(df: pd.DataFrame, metrics=("mahalanobis", "frobenius")
                         ) -> tuple[list[Table], Table]:
    """Best (α, β) per data set and ρ for each metric, and win counts.

    The best pair of a (data set, ρ) cell has the smallest mean error over its
    ok trials (ties: smallest α, then β). A cell where some pair has no ok
    trial is marked ``*`` (it was won among fewer pairs). Win counts are taken
    over all cells of a metric.
    """
    df = _alpha_beta(df)
    pairs = sorted({(float(a), float(b)) for a, b in zip(df["alpha"], df["beta"])})
    order = datasets_by_d(df)
    rhos = sorted(df["rho"].unique())
    d = dims(df)
    best_tables = []
    wins = pd.DataFrame(0, index=pd.MultiIndex.from_tuples(pairs, names=["alpha", "beta"]),
                        columns=list(metrics))
    for metric in metrics:
        s = trial_stats(df, metric, by=("dataset", "rho", "alpha", "beta"))
        text = pd.DataFrame(MISSING, index=[dataset_row_label(x, d) for x in order],
                            columns=[rho_label(r) for r in rhos])
        text.index.name = "data set"
        records = []
        for (ds, rho), g in s.groupby(level=["dataset", "rho"]):
            g = g.reset_index().sort_values(["mean", "alpha", "beta"])
            a, b = float(g.iloc[0]["alpha"]), float(g.iloc[0]["beta"])
            incomplete = len(g) < len(pairs)
            text.loc[dataset_row_label(ds, d), rho_label(rho)] = \
                f"({a:g}, {b:g})" + ("*" if incomplete else "")
            wins.loc[(a, b), metric] += 1
            records.append({"dataset": ds, "rho": rho, "alpha": a, "beta": b,
                            "mean": float(g.iloc[0]["mean"]), "pairs_compared": len(g)})
        best_tables.append(Table(
            f"hyperparameters_best_{metric}",
            f"Best (α, β) per data set and ρ by mean {style.metric_label(metric)} over trials "
            f"(* = some pairs had no ok trial in that cell).",
            text, pd.DataFrame(records)))
    wins_text = wins.astype(str)
    wins_text.index = [f"({a:g}, {b:g})" for a, b in wins.index]
    wins_text.index.name = "(α, β)"
    wins_text.columns = [style.metric_label(m) for m in metrics]
    wins_table = Table("hyperparameters_wins",
                       "Number of (data set, ρ) cells each (α, β) pair wins, per metric.",
                       wins_text, wins.reset_index())
    return best_tables, wins_table


# --- writers ---------------------------------------------------------------------------

def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|")


def to_markdown(table: Table) -> str:
    t = table.text
    header = [t.index.name or ""] + [str(c) for c in t.columns]
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |",
             "|" + "|".join(["---"] + ["---:"] * len(t.columns)) + "|"]
    for idx, row in t.iterrows():
        lines.append("| " + " | ".join(_md_escape(x) for x in [idx, *row.tolist()]) + " |")
    return "\n".join(lines) + "\n"


_TEX = [("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
        ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"), ("^", r"\^{}"),
        ("±", r"$\pm$"), ("α", r"$\alpha$"), ("β", r"$\beta$"), ("ρ", r"$\rho$"), ("—", "---"),
        ("ε", r"$\varepsilon$"), ("Δ", r"$\Delta$"), ("ᵀ", r"$^\top$"), ("²", r"$^2$"), ("…", r"\dots{}")]


def tex_escape(s: str) -> str:
    out = str(s)
    for a, _ in _TEX[:1]:
        out = out.replace(a, "\x00")
    for a, b in _TEX[1:]:
        out = out.replace(a, b)
    return out.replace("\x00", _TEX[0][1])


def to_latex(table: Table) -> str:
    """A booktabs ``tabular`` (``\\usepackage{booktabs}``) with its caption as a comment."""
    t = table.text
    cols = "l" + "r" * len(t.columns)
    header = [tex_escape(t.index.name or "")] + [tex_escape(c) for c in t.columns]
    lines = [f"% {table.caption}", f"\\begin{{tabular}}{{{cols}}}", "\\toprule",
             " & ".join(header) + r" \\", "\\midrule"]
    for idx, row in t.iterrows():
        lines.append(" & ".join(tex_escape(x) for x in [idx, *row.tolist()]) + r" \\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table(table: Table, out_dir: Path) -> list[Path]:
    """Write ``<name>.md`` and ``<name>.tex`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, tex = out_dir / f"{table.name}.md", out_dir / f"{table.name}.tex"
    md.write_text(to_markdown(table), encoding="utf-8")
    tex.write_text(to_latex(table), encoding="utf-8")
    return [md, tex]
