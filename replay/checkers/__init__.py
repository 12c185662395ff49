"""mlperf-logging's checkers run on derived logs: compliance, RCP, the package checker."""
