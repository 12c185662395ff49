"""Other libraries' chatter kept off the user's terminal, switched off before any of them is imported.

transformers draws a "Loading weights" progress bar for every checkpoint it loads and logs advice about its
own deprecations; Ray announces, for every new local cluster, the token authentication it turns on. None of
it is about the user's run, and on stderr it buries the one-line errors that are. Each library reads its
switch when it is imported, and the commands import them lazily, after `quiet_other_libraries` ran; Ray's
workers, torchrun's ranks and a submitter's `--backend command` inherit the environment.

What stays visible: transformers' errors, every exception (the commands report them as `error:` lines),
Ray's warnings other than that notice, and anything a user asked for: a variable already set is left as it
is (`TRANSFORMERS_VERBOSITY=info recorder eval ...` shows transformers' log again).
"""

from __future__ import annotations

import logging
import os
import warnings

# What each library reads at import to stay quiet.
QUIET_ENVIRONMENT = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # huggingface_hub's tqdm bars, and transformers' ("Loading weights")
    "TRANSFORMERS_VERBOSITY": "error",  # transformers' logger: its warnings and advice off, its errors kept
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
# Ray 2.5x logs "Token authentication is enabled for this Ray cluster ..." at WARNING when a local cluster starts
# with the default (token) mode: a notice about a secure default, not a problem. Only that module is raised to
# ERROR; setting RAY_AUTH_MODE instead would change how a --ray-address cluster is joined.
QUIET_LOGGERS = {"ray._private.authentication.authentication_token_setup": logging.ERROR}
# Deprecation notices the libraries raise about their own internals (FutureWarning attributed to their modules).
QUIET_WARNING_MODULES = r"(transformers|torch|ray|huggingface_hub|accelerate|tokenizers)(\.|$)"


def quiet_other_libraries() -> None:
    """Switch off the chatter above; call before the command imports transformers, torch or Ray."""
    for name, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    for name, level in QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
    warnings.filterwarnings("ignore", category=FutureWarning, module=QUIET_WARNING_MODULES)
