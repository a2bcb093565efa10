"""`gemma-verify advise`: from a workload and an SLO to the cheapest deployment that meets it.

``run.run_advise(AdviseOptions) -> AdviseReport`` ranks every catalog model x variant x accelerator shape
the constraints allow, at the replica count that meets the SLO at the stated load, each number with its
basis (measured by `gemma-verify bench`, or estimated by serving/latency.py with its stated error);
``cli`` maps flags onto the options; ``write`` turns a chosen row into a stack file. Offline: no
credentials, no network, well under five seconds.
"""
