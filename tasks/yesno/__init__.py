"""Yes-no bias suite (Bhatt & Ivanova, CogSci 2025): COMPS-YNQ and EWoK-YNQ."""
