"""The published prompt texts, character for character, with their sources; that they are the
defaults; that our own earlier wording stays selectable by name; and the options that pick them.

Response bias (tasks/response_bias/templates.yml): Tjuatja et al., TACL 2024, Appendix B.2 (the
default prompt) and the 2023 preprint (arXiv:2311.04076), Appendix C (extended generation) and
Appendix D (steering templates). Cognitive biases (tasks/cognitive/prompts.py): the decision and
extraction prompts of simonmalberg/cognitive-biases-in-llms (models/<Developer>/prompts.yml, as
loaded by YAML and filled by core/base.py LLM._decide; the words are also in Malberg et al.
2025, Appendix D).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import (
    DEFAULT_PROMPTS,
    PAPER_PROMPTS,
    TWO_STEP_PROMPTS,
    answer_prompt,
    decision_prompt,
    extraction_prompt,
    two_step_prompts,
)
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.prompts import render_prompt
from biasmonkey.tasks.response_bias.templates import TEMPLATES, load_templates

# A survey question as the prompt files hold it: the stem, then one lettered option per line.
QUESTION = "Do you like tea?\nA. Yes\nB. No\nC. Not sure"

# ---------------------------------------------------------------------------- response bias

PUBLISHED_TEMPLATES = {
    # TACL 2024, Appendix B.2 "Prompt template".
    "default": (
        "Please answer the following question with one of the alphabetical options provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
    # Preprint, Appendix C, "Extended generation" (a verbatim block; the separator is an em dash).
    "extended": (
        "Please answer the question below in the following format:\n"
        "Answer: <letter option>\n"
        "Reason: <reasoning>\n"
        "\u2014\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
    # Preprint, Appendix D.1, allow/forbid Template 1 ("means the same thing "not allow"", sic).
    "allow_forbid_steer1": (
        'Recall that to "forbid" means the same thing "not allow" or "not consider something as acceptable". '
        "With this in mind, please answer the following question with one of the alphabetical options provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
    # Preprint, Appendix D.1, allow/forbid Template 2.
    "allow_forbid_steer2": (
        'Humans have a tendency to say "yes" to "not allowing/accepting" something but "no" to "forbidding" '
        "something, despite the two entailing the same thing. With this in mind, please answer the following "
        "question with one of the alphabetical options provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
    # Preprint, Appendix D.2, response order Template 1: no "Answer:" after the question.
    "response_order_steer1": (
        "Please answer the following question using the steps below:\n"
        "1. Re-list the responses in reversed order\n"
        "2. Your answer to the question, which should be a single letter.\n"
        "After generating the answer, do not generate any more text.\n"
        "Example: Question: Do you prefer apples, oranges, or bananas? A. Apples B. Oranges C. Bananas\n"
        "Options: C. Bananas B. Oranges A. Apples\n"
        "Answer: <letter answer>\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure"
    ),
    # Preprint, Appendix D.2, response order Template 2.
    "response_order_steer2": (
        "Response order bias is the tendency for humans to choose options that appear earlier in a written "
        "list. With this in mind, please answer the following question with one of the alphabetical options "
        "provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
}

# Our wording, the texts these names had before the published ones were added.
OUR_TEMPLATES = {
    "extended_biasmonkey": (
        "Reply to the question below in this format:\n"
        "Answer: <the letter of your choice>\n"
        "Reason: <a brief explanation>\n"
        "---\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
    "allow_forbid_steer1_biasmonkey": (
        'Keep in mind that to "forbid" something means the same as to "not allow" it, that is, to not accept it. '
        "With this in mind, please answer the following question with one of the alphabetical options provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
    "allow_forbid_steer2_biasmonkey": (
        'People are more willing to say "yes" to not allowing something than to forbidding it, even though both '
        "mean the same. With this in mind, please answer the following question with one of the alphabetical "
        "options provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
    "response_order_steer1_biasmonkey": (
        "Answer the question below in two steps:\n"
        "1. Write the answer options again, in reverse order.\n"
        "2. Give your answer as one letter.\n"
        "Write nothing after your answer.\n"
        "Example:\n"
        "Question: Which fruit do you like most? A. Pears B. Plums C. Grapes\n"
        "Options: C. Grapes B. Plums A. Pears\n"
        "Answer: <letter>\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure"
    ),
    "response_order_steer2_biasmonkey": (
        "People tend to pick the options that come first in a written list. With this in mind, please answer the "
        "following question with one of the alphabetical options provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    ),
}


@pytest.mark.parametrize("name", PUBLISHED_TEMPLATES)
def test_published_templates_are_the_papers_texts(name: str) -> None:
    assert render_prompt(QUESTION, name) == PUBLISHED_TEMPLATES[name]
    assert render_prompt(QUESTION + "\n", name) == PUBLISHED_TEMPLATES[name]  # a trailing newline is dropped


@pytest.mark.parametrize("name", OUR_TEMPLATES)
def test_our_wording_stays_selectable_by_name(name: str) -> None:
    assert render_prompt(QUESTION, name) == OUR_TEMPLATES[name]
    assert RunOptions(mode="sample", template=name).template == name


def test_every_template_is_published_or_ours_and_the_default_is_published() -> None:
    assert set(TEMPLATES) == set(PUBLISHED_TEMPLATES) | set(OUR_TEMPLATES)
    assert RunOptions().template == RunOptions.from_mapping({}).template == "default"
    assert render_prompt(QUESTION) == PUBLISHED_TEMPLATES["default"]
    # the published names hold the published texts, whatever the option's value is
    sources = {name: TEMPLATES[name].source for name in PUBLISHED_TEMPLATES}
    assert sources["extended"].endswith('Appendix C "Prompt templates", paragraph "Extended generation"')
    assert "Appendix D.1" in sources["allow_forbid_steer2"] and "Template 2" in sources["allow_forbid_steer2"]
    assert "Appendix D.2" in sources["response_order_steer1"] and "max 100 tokens" in sources["response_order_steer1"]


def test_settings_per_template_are_the_preprints() -> None:
    # extended: up to 50 tokens, sample mode; response order 1: up to 100 tokens and no "Answer:"
    # cue, read from the "Answer: <letter>" line its example asks for; the others one token.
    assert (TEMPLATES["extended"].max_new_tokens, TEMPLATES["extended"].generates) == (50, True)
    steer1 = TEMPLATES["response_order_steer1"]
    assert (steer1.max_new_tokens, steer1.generates, steer1.text.endswith("Answer:")) == (100, True, False)
    assert steer1.read_answer("Options: C. Not sure B. No A. Yes\nAnswer: C", ("A", "B", "C")) == 2
    # extended: the output continues the prompt's "Answer:" line; a reason given first and the
    # letter on a later "Answer:" line (as the preprint's Figure 7 caption describes) reads too
    extended = TEMPLATES["extended"]
    assert extended.read_answer(" B\nReason: it is cheaper", ("A", "B", "C")) == 1
    assert extended.read_answer(" Tea is pleasant.\nAnswer: A", ("A", "B", "C")) == 0
    for name in ("allow_forbid_steer1", "allow_forbid_steer2", "response_order_steer2"):
        assert (TEMPLATES[name].max_new_tokens, TEMPLATES[name].generates) == (1, False)
    with pytest.raises(ValueError, match="template='response_order_steer1' lets the model write up to 100 tokens"):
        RunOptions(template="response_order_steer1")


def test_a_templates_file_of_your_own_needs_no_source(tmp_path: Path) -> None:
    path = tmp_path / "mine.yml"
    path.write_text("short:\n  text: 'Q: {question}\\nA:'\n  max_new_tokens: 1\n  answer: letter\n  biases: all\n")
    with pytest.raises(ValueError, match="missing description"):
        load_templates(path)
    path.write_text(path.read_text() + "  description: mine\n")
    assert load_templates(path)["short"].source == ""


def test_template_option_messages(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError, match="option template='extended_ours' is unknown; available: default, extended"):
        RunOptions.from_mapping({"template": "extended_ours", "mode": "sample"})
    # a near miss of the option's name is warned about (tasks/options.py) and the default is kept
    assert RunOptions.from_mapping({"templates": "extended"}).template == "default"
    assert "unknown option 'templates'; did you mean 'template'?" in caplog.text


# ---------------------------------------------------------------------------- cognitive biases

TEST_TEXT = "Situation:\nS1\nS2\n\nPrompt:\nP\n\nAnswer Options:\nOption 1: O_a\nOption 2: O_b"

# decision_prompt of models/<Developer>/prompts.yml after YAML loading (folded `>-`: each blank
# line is one newline), with the authors' test text (`Template.format`, ending with "\n").
PAPER_DECISION = (
    "You will be given a decision-making task with multiple answer options.\n"
    "Situation:\nS1\nS2\n\nPrompt:\nP\n\nAnswer Options:\nOption 1: O_a\nOption 2: O_b\n"
    "\nSelect exactly one option."
)
# extraction_prompt of the same file; options joined with "\n" (no trailing newline), the answer
# inserted as the model wrote it.
PAPER_EXTRACTION = (
    "You will be given answer options from a decision-making task and a written answer.\n"
    "--- OPTIONS ---\nOption 1: 100%\nOption 2: 50%\nOption 3: 0%\n\n"
    "--- ANSWER ---\n  I would go with the second one, Option 2.  \n\n"
    "--- INSTRUCTION ---\n"
    'Extract the option selected in the above answer (explicitly write "Option N" and nothing else where N is the '
    "number of the option). If you cannot extract the selected option, write 'No option selected'."
)
ANSWER = "  I would go with the second one, Option 2.  "


def test_cognitive_two_step_prompts_are_the_authors_by_default() -> None:
    assert DEFAULT_PROMPTS == "paper" and two_step_prompts() is PAPER_PROMPTS
    assert decision_prompt(TEST_TEXT) == decision_prompt(TEST_TEXT, "paper") == PAPER_DECISION
    assert extraction_prompt(["100%", "50%", "0%"], ANSWER) == PAPER_EXTRACTION
    assert extraction_prompt(["100%", "50%", "0%"], ANSWER, "paper") == PAPER_EXTRACTION
    # the raw templates, with the authors' placeholders
    assert PAPER_PROMPTS.decision == (
        "You will be given a decision-making task with multiple answer options.\n{{test_case}}\n"
        "Select exactly one option."
    )
    assert PAPER_PROMPTS.extraction.startswith(
        "You will be given answer options from a decision-making task and a written answer.\n"
        "--- OPTIONS ---\n{{options}}\n\n--- ANSWER ---\n{{answer}}\n\n--- INSTRUCTION ---\n"
    )
    assert "simonmalberg/cognitive-biases-in-llms" in PAPER_PROMPTS.source
    assert CognitiveOptions().prompts == CognitiveOptions.from_mapping({}, harness="inspect").prompts == "paper"


def test_cognitive_prompts_in_our_wording_by_name() -> None:
    assert list(TWO_STEP_PROMPTS) == ["paper", "biasmonkey"]
    assert decision_prompt(TEST_TEXT, "biasmonkey") == (
        "You are given a decision task with several answer options.\n\n"
        "Situation:\nS1\nS2\n\nPrompt:\nP\n\nAnswer Options:\nOption 1: O_a\nOption 2: O_b\n\n"
        "Choose exactly one of the options."
    )
    assert extraction_prompt(["100%", "50%", "0%"], ANSWER, "biasmonkey") == (
        "Below are the answer options of a decision task, followed by a written answer to that task.\n\n"
        "OPTIONS:\nOption 1: 100%\nOption 2: 50%\nOption 3: 0%\n\n"
        "ANSWER:\nI would go with the second one, Option 2.\n\n"
        'Which option does the answer choose? Write only "Option N", where N is the number of that option. '
        'If the answer chooses no option, write "No option selected".'
    )
    # the one-step prompt (lm-eval, Inspect one_step) is ours whatever `prompts` says
    assert answer_prompt(TEST_TEXT) == (
        "You are given a decision task with several answer options.\n\n"
        f"{TEST_TEXT}\n\n"
        "Choose exactly one option. Reply with the line of the option you choose, copied exactly as it is "
        'written above (it starts with "Option" and the option\'s number).\n'
        "Answer:"
    )


def test_cognitive_prompts_option_messages(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError, match="option prompts='authors' is invalid; use one of paper, biasmonkey"):
        CognitiveOptions(prompts="authors")
    with pytest.raises(ValueError, match="option prompts='x' is invalid; use one of paper, biasmonkey"):
        two_step_prompts("x")
    assert CognitiveOptions.from_mapping({"prompts": "biasmonkey"}, harness="inspect").prompts == "biasmonkey"
    assert CognitiveOptions.from_mapping({"prompts": "biasmonkey"}).prompts == "biasmonkey"
    # step two of lm-eval's two runs: Inspect runs both steps in one solver, the option is ignored there
    assert CognitiveOptions.from_mapping({"decisions": "x"}, harness="inspect").decisions is None
    assert "option 'decisions' does not apply to inspect and is ignored" in caplog.text
    caplog.clear()
    assert CognitiveOptions.from_mapping({"prompt": "biasmonkey"}, harness="inspect").prompts == "paper"
    assert "unknown option 'prompt'; did you mean 'prompts'?" in caplog.text
