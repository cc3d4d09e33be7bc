"""The authors' released model samples (Tjuatja et al., TACL 2024) as pinned, verified data files.

The BiasMonkey repository releases, for each of the nine models of the paper, 50 sampled answers
per question and prompt (`results/<model>/csv/<file>` at the pinned commit of
`biasmonkey.tasks.response_bias.data`). The report uses them as baselines beside the user's
models. A file is read from `$BIASMONKEY_DATA_DIR/biasmonkey/samples/<model>/<file>` when that
variable is set, otherwise downloaded once, checked against the sha256 below and cached
(`biasmonkey.tasks.fetch`), exactly like the prompt files. Only the 17 files per model that
`released_samples.score_sample_dir` reads are pinned (the reword and question-order files are not used).

`published_deltas(model)` scores a model's files with `released_samples` (the authors' analysis,
quirks included, so the rows equal `biasmonkey score-samples`) into the per-question Δ of every
(bias, setting). Reading a model's 300,000 sample rows takes seconds, so the Δs are also kept in
the cache, under a key made of the files' sha256 and the source of the scoring code: a change to
either scores again.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
from collections.abc import Iterable
from pathlib import Path

from biasmonkey.metrics import BIASES, SETTINGS
from biasmonkey.tasks.atomic_write import WriteError, make_folder, write_text
from biasmonkey.tasks.cache import CACHE_HINT, cache_root
from biasmonkey.tasks.fetch import DataError, PinnedFile
from biasmonkey.tasks.response_bias import released_samples
from biasmonkey.tasks.response_bias.data import UPSTREAM_COMMIT, UPSTREAM_REPO, base_url

log = logging.getLogger(__name__)

# The nine models of the paper, in the order of its tables (upstream folder names).
PUBLISHED_MODELS = (
    "llama2-7b",
    "llama2-13b",
    "llama2-70b",
    "llama2-7b-chat",
    "llama2-13b-chat",
    "llama2-70b-chat",
    "llama2-70b-ift",
    "gpt-3.5-turbo-instruct",
    "gpt-3.5-turbo",
)

# "<model>/<file>" -> sha256 of upstream results/<model>/csv/<file> at UPSTREAM_COMMIT.
SHA256: dict[str, str] = {
    "llama2-7b/acquiescence.csv": "a735b83944d8a76a973e3eaed8f1f046aa508994952ad849995972433aaf2ddf",
    "llama2-7b/acquiescence-key_typo.csv": "7a61d09f485b3092e8b4b20d3b9882d8d4c5f9d013723a642266708854a47461",
    "llama2-7b/acquiescence-middle_random.csv": "309c9b3bf1c7c465bc85c2b5db0f194306cbf232b2d9b728aff485a1ad9bb279",
    "llama2-7b/acquiescence-letter_swap.csv": "e5ad7cbbfaedb09593d1df3b9818d025fffb4b3261aa77b7b1834a3cc5fd73e7",
    "llama2-7b/allow_forbid.csv": "0c578be47c926e0c2916a23082c1fe1a7976ad9776328c355e08f1a69cfb8eec",
    "llama2-7b/allow_forbid-key_typo.csv": "7f4b658f7eaafae7c7118015e8b57de91f27a6f52174bb793c99a969d0a5e175",
    "llama2-7b/allow_forbid-middle_random.csv": "8f2841b14dcef9cf2d76d8a46ca959c14495a1a871749c0082144fda7f180702",
    "llama2-7b/allow_forbid-letter_swap.csv": "5e6231cd7718af3cce759d5b0e127cc5e58ff52f18bae21c301ee371210fec3a",
    "llama2-7b/response_order.csv": "7871cd23a25ba7bd0bee83e1a9b2df9d713c2bfc1c89dbc8a9f8c006eacbe9fd",
    "llama2-7b/response_order-key_typo.csv": "7747caa29c1cadece9c6d8849b16f829830e9083b67afda77847a08d0e84689d",
    "llama2-7b/response_order-middle_random.csv": "abb08114bc0ecf3b3f28cb15cba578a3897ee5aeef7351ce5961046169a82988",
    "llama2-7b/response_order-letter_swap.csv": "df5b596d5ee7a92346fd11a60e060c6b4e794b32934df18f9b7b027da30ffeb5",
    "llama2-7b/opinion_float.csv": "da2f42b613feee66e0e21141ff609c853c00c46af18fa3ec4902a7cfbb5f73ed",
    "llama2-7b/odd_even-key_typo.csv": "e95df19392892800e1fc7c1e28608dc90f416558a47323307e2135fd3bce5dca",
    "llama2-7b/odd_even-middle_random.csv": "7e9d4ddd54f931153c991e3669ae95d4e483b7f507afb5a951a55cfcd5290e51",
    "llama2-7b/odd_even-letter_swap.csv": "9b068745a91fd184eb90f7fd74407928522ec73cd51a7f2bc51f6468414297be",
    "llama2-7b/odd_even.csv": "a2521d2cdabe650b15dd0abb488e03c99c44b80cd59c256c73080177931c5033",
    "llama2-13b/acquiescence.csv": "ab92829ba36659eb867cc8fb41597d2e3c38cec75ef727efffd365d86a50bec5",
    "llama2-13b/acquiescence-key_typo.csv": "5e24d47902121da168d751fc1917ffdd0db9ad466577c8526cefa945a2694826",
    "llama2-13b/acquiescence-middle_random.csv": "bc3d660188a88b8952a449e7018d1cbdaed096720311255d6e2b229118c7e74a",
    "llama2-13b/acquiescence-letter_swap.csv": "3e7cf6d68ca9141a51bbcbf01a03231e7f00b3caa5bfac95cc0197bfc29f762c",
    "llama2-13b/allow_forbid.csv": "6f62b0ca162dcfe841cf1941191c2d23445728080b1baea1a6eb8ec7d5e1d0ec",
    "llama2-13b/allow_forbid-key_typo.csv": "91d7465d2dfdb3c5587f38e22c501b50644ace4a7e854daa912a9d05e6ebd394",
    "llama2-13b/allow_forbid-middle_random.csv": "4b326e5626c6a7071ef2700ff02cc5eda18b979d6c6d0136677169749016435c",
    "llama2-13b/allow_forbid-letter_swap.csv": "ca26bd85e3d888dfa1cb4333802d5ac29c146d79135c1c6c5db67d532ae01ce0",
    "llama2-13b/response_order.csv": "9ac8eab4a45bae6d530486b1468985f46e51f8ef1c1f69a3eac808aee26a93a6",
    "llama2-13b/response_order-key_typo.csv": "81c7cb203d798552902c6fbe62706457cc87ca71e51ca54a1c34776f922c1da1",
    "llama2-13b/response_order-middle_random.csv": "1e9771abc4f70251d1e8d7d5a874276f2f9b9f91c3f2bfc60156b48a428f47fe",
    "llama2-13b/response_order-letter_swap.csv": "23d4d5c5583e47c0bc247932700932d0c36da88137b86b911410be610a32c916",
    "llama2-13b/opinion_float.csv": "1466352f57eb365303e0828ab46f0f80c1c2543862d7eaffa5990ac11091a79c",
    "llama2-13b/odd_even-key_typo.csv": "be14385e4cecd7c0a9e520deeab8b7a08385884ad69656d17d19801d2ecfb181",
    "llama2-13b/odd_even-middle_random.csv": "47e60b19601452d3a0881ddb92ffc802a79607b04177b0c0d1441809fcdd5517",
    "llama2-13b/odd_even-letter_swap.csv": "d189b26dfebab4ce1373f1b14519a964726a720e783590b33d98686caf3de5a0",
    "llama2-13b/odd_even.csv": "a20429031636d3f111bb0de72b47aa2030d83eb63b1dd4fa9aa9009635d669fd",
    "llama2-70b/acquiescence.csv": "8dd1d42b1cabc23401f08cb20c800d7e3015c5cdfa0b81719e4b2fc7ea69d2aa",
    "llama2-70b/acquiescence-key_typo.csv": "0595f05f2101c942b9f92e6e997e849d74b19f7d6759badb1980e0618bae789c",
    "llama2-70b/acquiescence-middle_random.csv": "93f46966b514d952a602f3bddfd520a2b824b7604f3c29d9585eda0a9e3344cb",
    "llama2-70b/acquiescence-letter_swap.csv": "e87b9f629b1b264d94eea4b3e01a0f4522e4bee17e4761321025926b9e3d3914",
    "llama2-70b/allow_forbid.csv": "957abe6946dec8f6a57f6ef51ecca339dac4683422fd1b6c52e027124f8df3e8",
    "llama2-70b/allow_forbid-key_typo.csv": "85d0765f5f322bd52dffdb25ad6734ad4338c2201017827df75ad19653e407fe",
    "llama2-70b/allow_forbid-middle_random.csv": "2ba46806bf8a09f20b21ccc610a476e587a9326e36a2f7027c8e3f99b5856c51",
    "llama2-70b/allow_forbid-letter_swap.csv": "18056461f8a5373670e882e27a99dcaecd16c1b4b970985166ea142332d7b0f8",
    "llama2-70b/response_order.csv": "65e5670a15fd59e7686eeaaeed5236c23022b23478e11035857472e1e487cca8",
    "llama2-70b/response_order-key_typo.csv": "d63bbdf8e737f582b0bfeda11e89db3e423655da11d5444d834f94182a89c08a",
    "llama2-70b/response_order-middle_random.csv": "7980ef1dae1fb379e98ba43b08575593ea24b1a7542c2bb4f2dde476a737fa9b",
    "llama2-70b/response_order-letter_swap.csv": "47c836fed80723ee1fad00254529020a741d664d8ec0f62d089fed76dc7fa4c9",
    "llama2-70b/opinion_float.csv": "3ac60dd1c6ea414e0e5c1e5b1340c84d4ca501e9162b945a26175bbfe2af8e60",
    "llama2-70b/odd_even-key_typo.csv": "fe430c505eaa39b3a3372c7bd44e2484847cad0909d3ef9ad8f1ecc118dba679",
    "llama2-70b/odd_even-middle_random.csv": "5e0fcfbfe8cb5f9b7099becd56f7ffdd8e73b858d3f3279768e9784ac18778b5",
    "llama2-70b/odd_even-letter_swap.csv": "4d090ac393a34e6ce01aa8a947e61d68fa753631d951310c25160c68931ba875",
    "llama2-70b/odd_even.csv": "bf274f2eb10a981ab696672ee96dbc282eba90a78c22677b64929198fc6d93f2",
    "llama2-7b-chat/acquiescence.csv": "c74536383d785be1bba3248600c99e893bda3a32d7ed9ad86a7a59731fa41fb1",
    "llama2-7b-chat/acquiescence-key_typo.csv": "716d20aed190eeb619bd44174d6839e6662a9a843e7b95f6b2aa2286e7f37eb2",
    "llama2-7b-chat/acquiescence-middle_random.csv": "5419432afba516350fe7cfc64cc3a62a84c6127236cc3c60beb4d501e2cc8a69",
    "llama2-7b-chat/acquiescence-letter_swap.csv": "cff493e8aaea1e0ed9452ce81e57aa7ac3ab0c764f04a2ef0948d3e21ee82f4c",
    "llama2-7b-chat/allow_forbid.csv": "876aa9ea14fd017d2b38ea4589faab734425cbe6d3763e2a0a2d69cecbce18e8",
    "llama2-7b-chat/allow_forbid-key_typo.csv": "cf3a8fdb45bccb10037a0086bfa12939363d510fc60f7a56cc6105d1b79adeca",
    "llama2-7b-chat/allow_forbid-middle_random.csv": "cd29d7c98a066acff19891dd02b1fa9a4f5d5e47eb33bc631b2e0e786f4e6e2a",
    "llama2-7b-chat/allow_forbid-letter_swap.csv": "bfc22aff215232106d00f74e6a3f4f8adfa9abcdf10e572aa55b3b51f2526144",
    "llama2-7b-chat/response_order.csv": "487c59059c3dcddb39c8e9dc8de6fc05bd24bda2402992921e5d70fefeeb2a15",
    "llama2-7b-chat/response_order-key_typo.csv": "b0dc78fee112aaf1d3205b18eec1b3d1382b69a647e1d17cb94c9b2d5991d3a4",
    "llama2-7b-chat/response_order-middle_random.csv": "b9386918e36f181e1d86a083452123927b9e9607d70d127e5a8055d8d6d033db",
    "llama2-7b-chat/response_order-letter_swap.csv": "8202a9b672856f8030142526de18cdaf586b95d2013ac19fc415ebea094be50a",
    "llama2-7b-chat/opinion_float.csv": "1d85580ff3c14ab9830fec12051847a05d7d9e250018e31deb7d413e5879e48a",
    "llama2-7b-chat/odd_even-key_typo.csv": "90b0bbd3ba45f1d5f2b5415e196b357e5e889f6c157324630d63d0aad69448d1",
    "llama2-7b-chat/odd_even-middle_random.csv": "bd2175469deb6a659ac942ce7c7cc8a71c07b17f33acf27de72827236be363bd",
    "llama2-7b-chat/odd_even-letter_swap.csv": "037958233209b6e6a824df874c0fbfef7add0c528af041b5d8de9c27879d9398",
    "llama2-7b-chat/odd_even.csv": "c905a93714bc0c7e435558cb5982e3ee90c4fb3321273f1e3b3004cf248678ba",
    "llama2-13b-chat/acquiescence.csv": "7678edb358ff3ec502c3d558d9a8d1b7ce1bf51e9ff3036096678e33d1da3cf5",
    "llama2-13b-chat/acquiescence-key_typo.csv": "fd89e4cdf995f5d8826ba0f012929392f0bcc5d7d6f0e50661c05681355c5d4c",
    "llama2-13b-chat/acquiescence-middle_random.csv": "e833e18f7977f44143d30b12166bb9efb222d82b8e3f6feca3243d7bda8c6c85",
    "llama2-13b-chat/acquiescence-letter_swap.csv": "0629543cc1c1499cf9b3f892c4d6b4930081d377018e0b86b1db46873d3ac859",
    "llama2-13b-chat/allow_forbid.csv": "45045b13f82332818a8b262e12eff07c20e7c5cb3190f896a90fbe252ed481b1",
    "llama2-13b-chat/allow_forbid-key_typo.csv": "1f45242ece0699006bee42954170c9d4609de246d2712a0860951872e9fbe70d",
    "llama2-13b-chat/allow_forbid-middle_random.csv": "4cd834880f631aceacec086c1c766590fdf720fe5ff931b231ce9ec453996232",
    "llama2-13b-chat/allow_forbid-letter_swap.csv": "243b23ec3874ee01d918b01745f631bd11a080d45543d3048a14a7aebd86ba47",
    "llama2-13b-chat/response_order.csv": "e3559791dc8e0e7ec7c97ae92b15a60f4e73049bb96d1da36f5496fbc21513ea",
    "llama2-13b-chat/response_order-key_typo.csv": "c1450a1c02d07ca9596c371f992852fde0fdb7705d156feff2b823df82f1eed0",
    "llama2-13b-chat/response_order-middle_random.csv": "6a3a3322b0314a2d42cce9b6f3a887493075c8ccd14f125a7bd61a6a754504ff",
    "llama2-13b-chat/response_order-letter_swap.csv": "e7b56066be77bdd20f00274626f08ed8938a88c36b4d18cee0200ecaa0dedae7",
    "llama2-13b-chat/opinion_float.csv": "f5dbebf0abf50aafb8ccbc5d05eed2a0ad5e0701881f8ef27469ee619b76d23b",
    "llama2-13b-chat/odd_even-key_typo.csv": "ec638ec117362231e5dbb7734bb650b3dc0861033faa8cdd181b26e9c315bee7",
    "llama2-13b-chat/odd_even-middle_random.csv": "167925b618db4dde7e8d56d227fe92d2e78cf2d53e4486b4db4845d19ab096f6",
    "llama2-13b-chat/odd_even-letter_swap.csv": "2c2046eb484c930cca2b1f5007000eaeb8ed0338f11dd89aacf56157ae210cb7",
    "llama2-13b-chat/odd_even.csv": "0e6dac1b33e8e63bf3268a224a6f70345f6625a82a76daf62d2b25a56678d2d3",
    "llama2-70b-chat/acquiescence.csv": "fd99b9982bfbfc8d1499006e7c6834683d97edc3815ab7d00af387dc9fdf361a",
    "llama2-70b-chat/acquiescence-key_typo.csv": "f51eaa3cabc19228b6a60b634e7d9c49e7f3f48448b16429f7a2b2f45e986d1c",
    "llama2-70b-chat/acquiescence-middle_random.csv": "eaa587dd976eb3cba8c7f7809d64fca220854b4ce77eac6d4153efb0f9619f8c",
    "llama2-70b-chat/acquiescence-letter_swap.csv": "0481ed1c80616e3ee3f00755b4801c037001e3c1065b862f202431081df2bcc3",
    "llama2-70b-chat/allow_forbid.csv": "2952e6e046375e5ac9cd9746024c5315f6fb13c17a6a917a5cbe1dc10faf8c35",
    "llama2-70b-chat/allow_forbid-key_typo.csv": "cfd441fb89d46e1c7515a7be49c2f79651a6d3f09325e206da0dfb49cd935ba9",
    "llama2-70b-chat/allow_forbid-middle_random.csv": "e7cfe53df8328db0e639e7437ea566263ee7df7448f2bd80f53266be548f8858",
    "llama2-70b-chat/allow_forbid-letter_swap.csv": "e67d4a59e6c476de78b9b74303d51c541a87f338bf0f99144c68a38fb1d74b74",
    "llama2-70b-chat/response_order.csv": "c69cf614d10a0f5d8e542056a6a31d6bb0183cdd0af8f16da51a519fdaa7625c",
    "llama2-70b-chat/response_order-key_typo.csv": "a0d59bd638a6e1664d27183a9c6664480d575d37ef401cc16bb152a0e8a5c81e",
    "llama2-70b-chat/response_order-middle_random.csv": "83093fd29d1ad1252fd70cdd81d45586dac95686876e87be24cf836a4f707a3f",
    "llama2-70b-chat/response_order-letter_swap.csv": "1df0051990475ed4d28aa3e468d91bf489cb293fc2cf64d22726d25ce67873e1",
    "llama2-70b-chat/opinion_float.csv": "68fb7a7729b20415864fab90d1a66f4784f76783424fd464419fba121425fcc6",
    "llama2-70b-chat/odd_even-key_typo.csv": "bfd91735d57554291916145fd3756cb6cc5ef0ec9841d44af753781ecc928b9c",
    "llama2-70b-chat/odd_even-middle_random.csv": "a9bfcdde74dfaa79d5b283c0189a503df39f31439f40ece145a9bf85d7f60a6b",
    "llama2-70b-chat/odd_even-letter_swap.csv": "5d9407dd8818fd3f7af24e69bd99d1d8420e120ad21fcdca4d435a3370a8eed7",
    "llama2-70b-chat/odd_even.csv": "644067c88cd5a51f02ea18b5679ad8914b1370270deb5b07139c49ca9ae96dd4",
    "llama2-70b-ift/acquiescence.csv": "3915e594feb49b9963f21af906679117cb8c1e89af96e214e15d6451af79d903",
    "llama2-70b-ift/acquiescence-key_typo.csv": "ec8115c756a3374eb50976082bd0857a21cf694225efde3970b4646bf4fa6d38",
    "llama2-70b-ift/acquiescence-middle_random.csv": "551e8a482c2675d5a5f2e19561e7d9c8fdcf5f3260ac234493f7267177256aef",
    "llama2-70b-ift/acquiescence-letter_swap.csv": "5dd7798baa03780f834d5dcd0d52184770e5021797b32663ed9f6e6bb07e3fee",
    "llama2-70b-ift/allow_forbid.csv": "f7b66aa7c93de7397421afb67b4e15a857070df6c7c1afb1a0382753a85b9ec8",
    "llama2-70b-ift/allow_forbid-key_typo.csv": "88311958c960d988816c5e01233285bed535da48cf4d79f5f0c2b28d3a1ed96b",
    "llama2-70b-ift/allow_forbid-middle_random.csv": "5da37c32caf2236401aacadb006989d58bae10cd72f80d6c6bd5075b555638e5",
    "llama2-70b-ift/allow_forbid-letter_swap.csv": "61ab12adcd6ae3fef0aac08207095f72b7975c4961b0be089d1177fcd5c44e80",
    "llama2-70b-ift/response_order.csv": "fc4b53e9efd4c810f8b2e4f2ca35ab2945506e2d916de0465eb01e545a20aeec",
    "llama2-70b-ift/response_order-key_typo.csv": "65886290afce6bbf1fcd4139dc7c54d5f4fbb126ef10e8eaf959346903868e2e",
    "llama2-70b-ift/response_order-middle_random.csv": "1fe75bfd7a159d23f461778f6e003820de6656907fb6e68a916be32b6c6638a3",
    "llama2-70b-ift/response_order-letter_swap.csv": "173ae2549841274aeb11cd9459dbac00ceec6bd054172a54c2fe6adb9cb245cf",
    "llama2-70b-ift/opinion_float.csv": "308733b5d16918cf9827b4cca7a307d46b00d0c5254f196042e59f0ac79c3acd",
    "llama2-70b-ift/odd_even-key_typo.csv": "4cf1e51dafc63f01765ff7183708b537d5555b228440a1295aedaed510bc614b",
    "llama2-70b-ift/odd_even-middle_random.csv": "61b51f7f1f5fac596ef15579e7f52566cf8a3b81e71902c64f201584ed105fa5",
    "llama2-70b-ift/odd_even-letter_swap.csv": "1e97eeb7b7d55c0b8b422505496418c11429e8d77c36d1294d4a4512aabfefcb",
    "llama2-70b-ift/odd_even.csv": "93a2b831b37d2a5284bb1c782ed019856045ecf77fb26b536d3aaafc75d0202e",
    "gpt-3.5-turbo-instruct/acquiescence.csv": "1094449168399ed14f2a4e0ecc4fe53015037e6a0c724ec62cd3262be0e325ff",
    "gpt-3.5-turbo-instruct/acquiescence-key_typo.csv": "6eb6b5dd32597a773587160813b71879ea0c095250a7648195a6466e093a94cb",
    "gpt-3.5-turbo-instruct/acquiescence-middle_random.csv": "7db3d8b827837168e174c420432aa977b3b56ee8db8b8eb03956d080faf3b03f",
    "gpt-3.5-turbo-instruct/acquiescence-letter_swap.csv": "70cd9981d977af0b4ee2ce605ca6466e0ed3587b9db12242cd244fec3a73ed8d",
    "gpt-3.5-turbo-instruct/allow_forbid.csv": "1029f2d6662b2c2c7a7b5bb8456a8482355a38641ea864c837b292da57b830e2",
    "gpt-3.5-turbo-instruct/allow_forbid-key_typo.csv": "8c4f6fa9898dfeb60d52b7f246e4419139701fe7d1b4e42776fc8b2edd9a08e1",
    "gpt-3.5-turbo-instruct/allow_forbid-middle_random.csv": "9da42c4585a23772862debcc42686aa7ee00340442b057392997e12601d9a127",
    "gpt-3.5-turbo-instruct/allow_forbid-letter_swap.csv": "ad5f76c05cf44132f45d2e71b6ded5024f2535b3a5b044a59a0128e50c3c4323",
    "gpt-3.5-turbo-instruct/response_order.csv": "2b60822fe4f8bb436b87de3431e4bc1db23c3e02a732d2a2904c0b7bca9d870d",
    "gpt-3.5-turbo-instruct/response_order-key_typo.csv": "87a955a010c4021f4cf5e2244ab0b6dcdd1a54321d36a030320745aeaf36c912",
    "gpt-3.5-turbo-instruct/response_order-middle_random.csv": "3e7c378c57c56a3146a082eafb416ecee629b898acaecc0988f5fc7ad16aeeb9",
    "gpt-3.5-turbo-instruct/response_order-letter_swap.csv": "cebd5e69a906ab1c9406f1a67875f485622a3830b2ef891af892a96609af5030",
    "gpt-3.5-turbo-instruct/opinion_float.csv": "320b9df6fbedf88ef51b19e40bd0579dc0504206e5283d53fb4eb1a73187f13b",
    "gpt-3.5-turbo-instruct/odd_even-key_typo.csv": "dd14e2a59f9be64f6445dff6f1b6da51161df7a57ab70dd0cbec7f82c6f0e587",
    "gpt-3.5-turbo-instruct/odd_even-middle_random.csv": "e755f0b4cf80bf27ec3ec48d497a43409bbb91b59627c48f4e3e69507a6275b7",
    "gpt-3.5-turbo-instruct/odd_even-letter_swap.csv": "07a688091cce05ed8a75bf50d12ab5426350ee2c0214ed0d32f8241b0c40886c",
    "gpt-3.5-turbo-instruct/odd_even.csv": "eadd1e8c4e834819d0e10013765f3b0992c2b6939b93645ad6b41b55cd50e80e",
    "gpt-3.5-turbo/acquiescence.csv": "2f43f6806d0a6526bc329cd60169a6b9fb1146374206206a3e45d3af292e8965",
    "gpt-3.5-turbo/acquiescence-key_typo.csv": "0cafe28c89aa92647f9578c9597b3d4c3f907c0fad1a597c303f2fc80f48d3f5",
    "gpt-3.5-turbo/acquiescence-middle_random.csv": "8d63abab4393c1d9b6da12b7156366f96d2c59a7939ef85e7ffc50d9ac2bd0e8",
    "gpt-3.5-turbo/acquiescence-letter_swap.csv": "2dc856753147a91d66914c23ef2871f8110e90447951fe0d4a2dde7e4bb3b546",
    "gpt-3.5-turbo/allow_forbid.csv": "dfca0edd2a3c4d0d31649909308b9c70002cf519f72615519332754dbd319423",
    "gpt-3.5-turbo/allow_forbid-key_typo.csv": "e254f5c1da8744d5c8f4caf0868debd290fe3ce262ec521637324345abbf7e80",
    "gpt-3.5-turbo/allow_forbid-middle_random.csv": "6d6abd204f6e8ffda69340c359263e1fcae1b4d790599374b7a0ee30d5e3d5f4",
    "gpt-3.5-turbo/allow_forbid-letter_swap.csv": "4d5fb86b95f6fcd8d41846d91038cc17ab27aea121ce6fcc9f130dc11be1ce8b",
    "gpt-3.5-turbo/response_order.csv": "5974e8c79fd533a606dbda2a3ec5acf81bc630b7901d2d313d37a5d74c729269",
    "gpt-3.5-turbo/response_order-key_typo.csv": "f7ca35e421d50dbdbcc1f277f50e369f7d5a91609fca5a2324908b05bcb6e6b9",
    "gpt-3.5-turbo/response_order-middle_random.csv": "983043e3b1bacfb3e8121dac116f949a1d8225d9a39af39a84c2d005f37c3998",
    "gpt-3.5-turbo/response_order-letter_swap.csv": "e4baedceccafef27bd35455d5790db82a18799994da501a531eacaa9a70ece19",
    "gpt-3.5-turbo/opinion_float.csv": "6f86243c194298fb197a53497347e32338e6e3bb84a4c22a6017f254afbc1894",
    "gpt-3.5-turbo/odd_even-key_typo.csv": "05179705a48cf638b93591e8ba71d0b6d8dbea7e8b31b2da7d12fe441f5de2e3",
    "gpt-3.5-turbo/odd_even-middle_random.csv": "b0c4fcbcd4b3b6b4cda517358d9b14b1d56990dbe001cc0493626f7bed796ba2",
    "gpt-3.5-turbo/odd_even-letter_swap.csv": "893ef87e07120db41b945f83f17a5c1b9efec0879bff6c6a5cadcec8abc04a37",
    "gpt-3.5-turbo/odd_even.csv": "edec0297fecf16faf66c3e288d1afd5f9985b9931b3aa26ae40d687428909508",
}


def check_models(names: Iterable[str]) -> tuple[str, ...]:
    """The given published model names, validated (an unknown name is an error with a suggestion)."""
    chosen = []
    for name in names:
        if name not in PUBLISHED_MODELS:
            close = difflib.get_close_matches(name, PUBLISHED_MODELS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DataError(f"unknown published model {name!r}{hint} (known: {', '.join(PUBLISHED_MODELS)})")
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def resolve_sample(model: str, file: str) -> Path:
    """Local path of one verified sample file (downloaded and cached without BIASMONKEY_DATA_DIR)."""
    check_models([model])
    name = f"{model}/{file}"
    if name not in SHA256:
        raise DataError(f"unknown released sample file {name!r}")
    return pinned_sample(name).fetch()


def pinned_sample(name: str) -> PinnedFile:
    """One released sample file (`<model>/<file>`, a key of SHA256) as a pinned file."""
    model, file = name.split("/")
    return PinnedFile(
        local_path=f"biasmonkey/samples/{name}",
        cache_path=f"biasmonkey/{UPSTREAM_COMMIT[:12]}/samples/{name}",
        url=f"{base_url()}/results/{model}/csv/{file}",
        sha256=SHA256[name],
        upstream=f"{UPSTREAM_REPO}@{UPSTREAM_COMMIT[:7]}",
    )


def sample_dir(model: str) -> Path:
    """The folder holding every verified sample file of `model` that the scoring reads."""
    folders = {resolve_sample(model, file).parent for file in released_samples.expected_files()}
    if len(folders) != 1:  # cannot happen with the layouts above; the scorer needs one folder
        raise DataError(f"the sample files of {model} are spread over {sorted(map(str, folders))}")
    return folders.pop()


def _fingerprint(model: str) -> str:
    """Key of a model's scored Δs: its files' sha256 and the source of the code that scores them."""
    from biasmonkey.metrics import response_bias
    from biasmonkey.tasks.response_bias import pairs

    h = hashlib.sha256()
    for file in released_samples.expected_files():
        h.update(SHA256[f"{model}/{file}"].encode())
    for module in (released_samples, response_bias, pairs):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


Deltas = dict[tuple[str, str], dict[str, float]]
_scored: dict[tuple[str, str], Deltas] = {}  # (model, fingerprint) -> Δs, for this process


def _score(folder: Path) -> Deltas:
    return {(b, s): released_samples.pair_deltas(folder, b, s) for b in BIASES for s in SETTINGS}


def published_deltas(model: str) -> Deltas:
    """{(bias, setting): {question key: Δ in points}} of one published model's released samples.

    The files are resolved and verified on every call (a tampered copy is a DataError naming
    it); the scoring is reused from this process or the cache when the files and the scoring
    code are unchanged."""
    folder = sample_dir(model)
    key = (model, _fingerprint(model))
    if key in _scored:
        return _scored[key]
    cached = cache_root() / "scores" / f"biasmonkey-samples-{UPSTREAM_COMMIT[:12]}" / f"{model}-{key[1]}.json"
    deltas = _read_cache(cached)
    if deltas is None:
        log.info("scoring the released samples of %s (once; kept in %s)", model, cached.parent)
        deltas = _score(folder)
        _write_cache(cached, deltas)
    _scored[key] = deltas
    return deltas


def _read_cache(path: Path) -> Deltas | None:
    try:
        raw = json.loads(path.read_text())
        deltas = {(b, s): {k: float(v) for k, v in raw[f"{b}/{s}"].items()} for b in BIASES for s in SETTINGS}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent or unreadable: score again
    return deltas


def _write_cache(path: Path, deltas: Deltas) -> None:
    try:
        make_folder(path.parent, CACHE_HINT)
        write_text(path, json.dumps({f"{b}/{s}": d for (b, s), d in deltas.items()}), CACHE_HINT)
    except WriteError as err:  # a read-only cache only costs time
        log.warning("could not cache the scored samples in %s: %s", path, err)


__all__ = ["PUBLISHED_MODELS", "SHA256", "check_models", "published_deltas", "resolve_sample", "sample_dir"]
