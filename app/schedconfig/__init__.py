"""kube-scheduler's configuration for an engine conf: the KubeSchedulerConfiguration whose
profiles score nodes natively as the conf's ``nodeorder`` and ``binpack`` would, and whose
extender entry asks the extender only for what kube-scheduler cannot judge (admission)."""
