"""A vLLM fleet on GKE: the cluster (created or existing), an accelerator node pool, the Kubernetes workload."""
