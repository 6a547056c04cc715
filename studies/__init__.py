"""One-off studies: the measurements behind the design notes (docs/), not part of the installed package.

Each module is a command run from the root of a clone, ``python -m studies.<name>`` (the
Makefile's ``bench*`` targets), and writes its table under ``figures/tables/``. They use the
library and the harness; neither uses them. What they share (timing, relative errors, the KKT
residuals, synthetic data) is in :mod:`studies._common`; the solvers' own work is counted
through :mod:`paceggm.reconstruction.counters`.
"""
