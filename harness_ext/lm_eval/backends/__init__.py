"""biasmonkey's lm-eval model backends; importing this package registers them with lm-eval."""

from biasmonkey.harness_ext.lm_eval.backends import (
    hf_prefix,  # noqa: F401  (--model biasmonkey-hf)
    served,  # noqa: F401  (--model biasmonkey-server)
)
