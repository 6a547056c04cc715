"""Privacy primitives: mechanisms, sensitivities, the zCDP ledger and conversions.

Everything that touches privacy in the project goes through this package, so
that the baselines and the harness share one audited implementation.
"""

from paceggm.privacy.accounting import zcdp_to_approx_dp
from paceggm.privacy.ledger import BudgetExceededError, Charge, ZCDPLedger
from paceggm.privacy.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
    exponential_mechanism_epsilon,
    gaussian_mechanism,
    gaussian_sigma,
)
from paceggm.privacy.sensitivity import entry_sensitivity, full_sensitivity

__all__ = [
    "BudgetExceededError",
    "Charge",
    "ZCDPLedger",
    "entry_sensitivity",
    "exponential_mechanism",
    "exponential_mechanism_epsilon",
    "exponential_mechanism_probabilities",
    "full_sensitivity",
    "gaussian_mechanism",
    "gaussian_sigma",
    "zcdp_to_approx_dp",
]
