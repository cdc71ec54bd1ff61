"""The FunReason recipes: ``funreason.refine``, ``funreason.sft``, ``funreason.self-refine`` and
``funreason.eval`` (configs and ``run(cfg, run)``)."""
