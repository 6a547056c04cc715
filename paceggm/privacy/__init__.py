"""Privacy primitives: mechanisms, sensitivities, the zCDP ledger and conversions.

Everything that touches privacy in the project goes through this package, so
that the baselines and the harness share one audited implementation.
"""

from paceggm.exceptions import AccountantUnavailableError
from paceggm.privacy import exact
from paceggm.privacy.accountant import FileZCDPAccountant, ZCDPAccountant
from paceggm.privacy.accounting import approx_dp_to_zcdp, zcdp_to_approx_dp
from paceggm.privacy.ledger import BudgetExceededError, Charge, ZCDPLedger
from paceggm.privacy.mechanisms import (
    NOISES,
    exponential_mechanism,
    exponential_mechanism_epsilon,
    exponential_mechanism_probabilities,
    gaussian_mechanism,
    gaussian_sigma,
    laplace_epsilon,
    laplace_mechanism,
    sparse_vector,
    sparse_vector_epsilon,
)
from paceggm.privacy.sensitivity import (
    cross_moment_sensitivity,
    distinct_entries_sensitivity,
    eigenvalue_l1_sensitivity,
    eigenvalue_sensitivity,
    entry_sensitivity,
    full_sensitivity,
    mean_sensitivity,
    spectral_sensitivity,
    trace_sensitivity,
)
from paceggm.privacy.sphere import bingham_mechanism, sample_bingham

__all__ = [
    "AccountantUnavailableError",
    "BudgetExceededError",
    "Charge",
    "FileZCDPAccountant",
    "NOISES",
    "ZCDPAccountant",
    "ZCDPLedger",
    "approx_dp_to_zcdp",
    "bingham_mechanism",
    "cross_moment_sensitivity",
    "distinct_entries_sensitivity",
    "eigenvalue_l1_sensitivity",
    "eigenvalue_sensitivity",
    "entry_sensitivity",
    "exact",
    "exponential_mechanism",
    "exponential_mechanism_epsilon",
    "exponential_mechanism_probabilities",
    "full_sensitivity",
    "gaussian_mechanism",
    "gaussian_sigma",
    "laplace_epsilon",
    "laplace_mechanism",
    "mean_sensitivity",
    "sample_bingham",
    "sparse_vector",
    "sparse_vector_epsilon",
    "spectral_sensitivity",
    "trace_sensitivity",
    "zcdp_to_approx_dp",
]
