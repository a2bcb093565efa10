"""The stack config keys and the environment variable through which `gemma-verify promote` steers a rollout.

Why here: the program reads these keys (stacks/cloud_run.py `TrafficSettings`, stacks/gke_rollout.py,
deploy/rollout_state.py) and the promotion writes them (verify/pulumi_gateway.py); they are one contract
between the two sides, so it lives in the leaf both read, not in either side's package. A test checks that
each key names a field of the settings that read it.
"""

from __future__ import annotations

# The Pulumi project's name (Pulumi.yaml): the namespace of every one of the project's config keys.
CONFIG_NAMESPACE = "gemma-serving"
# A gated Cloud Run stack's traffic split, set for one `pulumi up`; path syntax for `pulumi config set --path`.
SERVING_REVISION_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.servingRevision"
PREVIOUS_REVISION_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.previousRevision"
CANDIDATE_PERCENT_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.candidatePercent"
# The id only promotion's own `pulumi up` carries (in PROMOTION_RUN_ENV too): keys a killed promotion leaves
# behind are inert for any other update (deploy/rollout_state.py, obeyed_traffic).
PROMOTION_RUN_KEY = f"{CONFIG_NAMESPACE}:cloudRun.traffic.promotionRun"
PROMOTION_RUN_ENV = "GEMMA_PROMOTION_RUN"
# A gated GKE fleet's serving track (stacks/gke_rollout.py): a setting that stays, set by verify promote.
SERVING_TRACK_KEY = f"{CONFIG_NAMESPACE}:gke.rollout.servingTrack"
# Behind the inference gateway: the candidate track's share of requests (the HTTPRoute's weights).
TRACK_SHARE_KEY = f"{CONFIG_NAMESPACE}:gke.rollout.candidatePercent"
