"""The yes-no prompts, string for string against the authors' stimuli.

AUTHORS_* below are the two prefixes per set of the authors' `dataset_prompts.py`
(ombbhatt/logprobs-bias-correct @ 48591bb20f6d95f3a27bb81041dd59a4b81e2570: `prompt_cond1`, the
instruction with two examples, used for `fewshot`; `prompt_cond2`, the instruction alone, for
`instronly`), copied character for character. Their `logprobs_yesno.py` scores
`prefix + query + "\\nResponse:" + answer` (zero-shot: `query + answer`). MMLU's prompts:
tests/answer_position/test_answer_position_data.py.
EWoK text is never written here: its tests build the expected text from the loaded item.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from biasmonkey.tasks.yesno import data
from biasmonkey.tasks.yesno.prompts import (
    CONTINUATIONS,
    PROMPTS,
    render_prompt,
)

AUTHORS_FEWSHOT = {  # prompt_cond1
    "comps": "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n#EXAMPLE\nQuestion: Does a blueberry fire bullets?\nResponse: No\n\n#EXAMPLE\nQuestion: Does a turtle have a hard shell?\nResponse: Yes\n\n#EXAMPLE\nQuestion: ",
    "ewok": "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n#EXAMPLE\nQuestion: Claire sees something that is fabric. Can Claire pour it?\nResponse: No\n\n#EXAMPLE\nQuestion: Sally pays salary to Harry. Is Sally Harry's boss?\nResponse: Yes\n\n#EXAMPLE\nQuestion: ",
    "babi": "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n#EXAMPLE\nQuestion: Marshall is in the car. Is Marshall in the building?\nResponse: No\n\n#EXAMPLE\nQuestion: Nathan is a pianist. Pianists like oranges. Does Nathan like oranges?\nResponse: Yes\n\n#EXAMPLE\nQuestion: ",
    "arith": "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n#EXAMPLE\nQuestion: Is 7 minus 9 equal to 4?\nResponse: No\n\n#EXAMPLE\nQuestion: Is 17 plus 15 equal to 32?\nResponse: Yes\n\n#EXAMPLE\nQuestion: ",
}
AUTHORS_INSTRONLY = {  # prompt_cond2
    "comps": "#INSTRUCTIONS\nAnswer the following yes-no question:\n\n#EXAMPLE\nQuestion: ",
    "ewok": "#INSTRUCTIONS\nAnswer the following yes-no question:\n\n#EXAMPLE\nQuestion: ",
    "babi": "#INSTRUCTIONS\nAnswer the following yes-no question:\n\n#EXAMPLE\nQuestion: ",
    "arith": "#INSTRUCTIONS\nAnswer the following yes-no question:\n\n#EXAMPLE\nQuestion: ",
}
SETS = ("comps", "ewok", "babi", "arith")


def authors_prompt(query: str, dataset: str, prompt: str) -> str:
    """The text before the answer in the authors' code."""
    if prompt == "fewshot":
        return AUTHORS_FEWSHOT[dataset] + query + "\nResponse:"
    if prompt == "instronly":
        return AUTHORS_INSTRONLY[dataset] + query + "\nResponse:"
    return query


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("dataset", SETS)
def test_every_set_and_prompt_type_is_the_authors_text(dataset: str, prompt: str) -> None:
    query = "Q: is it so?"
    assert render_prompt(query, dataset, prompt) == authors_prompt(query, dataset, prompt)


def test_spelled_out_prompts() -> None:
    assert render_prompt("Is 2 plus 2 equal to 4?", "arith") == "Is 2 plus 2 equal to 4?"
    assert render_prompt("Is 2 plus 2 equal to 4?", "arith", "instronly") == (
        "#INSTRUCTIONS\nAnswer the following yes-no question:\n\n#EXAMPLE\nQuestion: Is 2 plus 2 equal to 4?\nResponse:"
    )
    assert render_prompt("Ann is here. Is Ann here?", "babi", "fewshot") == (
        "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n"
        "#EXAMPLE\nQuestion: Marshall is in the car. Is Marshall in the building?\nResponse: No\n\n"
        "#EXAMPLE\nQuestion: Nathan is a pianist. Pianists like oranges. Does Nathan like oranges?\nResponse: Yes\n\n"
        "#EXAMPLE\nQuestion: Ann is here. Is Ann here?\nResponse:"
    )


def test_continuations_and_prompt_lists() -> None:
    assert CONTINUATIONS == (" Yes", "Yes", " No", "No")  # the authors' yes_variants + no_variants
    assert PROMPTS == ("zeroshot", "instronly", "fewshot")


def test_unknown_prompt_or_set() -> None:
    with pytest.raises(ValueError, match="unknown prompt 'threeshot'"):
        render_prompt("Q?", "arith", "threeshot")
    with pytest.raises(ValueError, match="unknown dataset 'boolq'"):
        render_prompt("Q?", "boolq", "instronly")
    with pytest.raises(ValueError, match="no few-shot examples for dataset 'boolq'"):
        render_prompt("Q?", "boolq", "fewshot")


# ------------------------------------------------------------------------------ real items


@pytest.mark.parametrize("prompt", PROMPTS)
def test_real_items_render_as_the_authors(data_dir: Path, prompt: str) -> None:
    arith = data.load_items("arith")[0]
    assert render_prompt(arith.query, "arith", prompt) == authors_prompt("Is 8 plus 3 equal to 17?", "arith", prompt)
    babi = data.load_items("babi")[0]
    expected = authors_prompt("Sandra went to the hallway. Is Sandra in the hallway?", "babi", prompt)
    assert render_prompt(babi.query, "babi", prompt) == expected
    comps = data.load_items("comps")[0]
    assert render_prompt(comps.query, "comps", prompt) == authors_prompt(comps.query, "comps", prompt)
    # EWoK: built from the item itself (no EWoK text in this file)
    for item in data.load_items("ewok", "physical_dynamics")[:3]:
        assert render_prompt(item.query, "ewok", prompt) == authors_prompt(item.query, "ewok", prompt)
