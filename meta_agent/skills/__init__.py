"""Skills: markdown + code interventions with evidence, shared across runs and projects."""
