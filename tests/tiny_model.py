"""A tiny, randomly initialised GPT-2 with a byte-level BPE tokenizer, built offline in ~1 s.

For plumbing tests only (its outputs are noise): it loads with ``transformers.Auto*`` and with
``lm_eval --model hf --model_args pretrained=<path>``, has a chat template, tokenises any text,
and encodes each of " A".." F" and "A".."F" as a single token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

EOS = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
LETTERS = "ABCDEF"

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Small survey-like corpus; the letter lines make " A".." F" into BPE merges.
_CORPUS = [
    "How much do you agree with the following statement?",
    "Please answer the question below by choosing one of the options.",
    "Strongly agree, agree, neither agree nor disagree, disagree, strongly disagree.",
    "On a scale from one to five, how satisfied are you with your job?",
    "Do you think the government should spend more money on public transport?",
    "In general, would you say that most people can be trusted?",
    "How often do you read a newspaper: every day, a few times a week, rarely or never?",
    "Which of these statements comes closest to your own view?",
    "Answer with the letter of the option you prefer.",
    "Question: Is it better to save money or to spend it now?",
    "Options: A. Yes B. No C. Not sure D. Refuse to answer",
    "Some people say that the economy is getting better, others say it is getting worse.",
    "What is the most important problem facing the country today?",
    "Would you describe yourself as very happy, fairly happy, not very happy or not at all happy?",
    "The answer is A. The answer is B. The answer is C. The answer is D.",
    "Imagine that you have to choose between two programs to fight a disease.",
    "If program A is adopted, two hundred people will be saved.",
    "If program B is adopted, there is a one third chance that everyone will be saved.",
    "Please think carefully before you answer, and give only one answer.",
    "Thank you for taking part in this survey. Your answers are anonymous.",
    "Do you approve or disapprove of the way the mayor is handling her job?",
    "Assistant: I would choose option B because it is safer.",
    "User: Which option do you choose? Answer with a single letter.",
    "How confident are you that your answer is correct, from zero to one hundred percent?",
    "Most respondents preferred the first option, while a minority selected the second.",
    "Households with children reported higher expenses for food, housing and education.",
    "Interviewers recorded whether the respondent hesitated before answering.",
    "The order of the response categories was randomised for half of the sample.",
    "Participants were paid a small amount of money for completing the questionnaire.",
    "Would you support or oppose a law requiring employers to offer paid sick leave?",
    "Compared with five years ago, is your neighbourhood safer, less safe, or about the same?",
    "Rate the following products: excellent, good, fair, poor, very poor.",
    "Please indicate your age group, gender, education level and region.",
    "A bat and a ball cost one dollar and ten cents in total.",
    "Linda is thirty one years old, single, outspoken, and very bright.",
    "The probability of rain tomorrow is estimated at seventy percent.",
    "Respondents who said yes were asked a follow up question about their reasons.",
    "Social desirability can lead people to overreport voting and volunteering.",
    "Acquiescence means agreeing with statements regardless of their content.",
    "A B C D E F",
    " A B C D E F",
    "(A) (B) (C) (D) (E) (F)",
    "A) first B) second C) third D) fourth E) fifth F) sixth",
    "0 1 2 3 4 5 6 7 8 9 10 100 2024",
]


def _train_tokenizer(vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # all 256 bytes: any text encodes
        show_progress=False,
    )
    letters = " ".join([" " + " ".join(LETTERS)] * 50)  # frequent " A".." F" pairs
    tok.train_from_iterator(_CORPUS * 20 + [letters] * 20, trainer=trainer)
    return tok


def build_tiny_model(path: Path, seed: int = 0, vocab_size: int = 1000) -> Path:
    """Write a tiny random GPT-2 model and tokenizer to ``path``; same seed, same weights."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(vocab_size),
        bos_token=EOS,
        eos_token=EOS,
        pad_token=EOS,
        unk_token=EOS,
        additional_special_tokens=[IM_START, IM_END],
        model_max_length=1024,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    eos_id = tokenizer.convert_tokens_to_ids(EOS)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=1024,
        n_embd=64,
        n_layer=2,
        n_head=2,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=eos_id,
    )
    with torch.random.fork_rng(devices=[]):  # seed locally, leave the global RNG alone
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_llama(tokenizer: Any, device: str = "cpu", dtype: torch.dtype = torch.float32) -> Any:
    """A random two-layer Llama (sdpa, RMSNorm) over `tokenizer`'s vocabulary: its forward has no
    check of its own that reads the device (GPT-2's looks for padding in the input ids when no mask
    is given)."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(
        vocab_size=max(512, len(tokenizer)),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").to(device, dtype).eval()


def comb_requests() -> list[tuple]:
    """lm-eval token-level requests ((context, continuation) key, context, continuation): six
    contexts taking 10, 13, ... tokens of a shared head, then two tokens of their own, each with a
    one-token and a two-token continuation."""
    head = list(range(20, 50))
    out = []
    for branch in range(6):
        context = head[: 10 + 3 * branch] + [60 + branch, 70 + branch]
        for cont in ([5], [6, 7]):
            out.append(((str(context), str(cont)), context, cont))
    return out
