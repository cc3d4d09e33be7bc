"""Generation of new cognitive-bias tests from templates, scenarios and a generator model."""
