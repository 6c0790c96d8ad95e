"""Our API's kinds as the controllers address them: one declaration each, from the spec model's constants.

Controllers import their kinds from here instead of declaring them again (the Inferno controller scales
ModelServings and reads ModelBoosters; the ModelBooster controller writes them). This layer sits below the
controllers and above the runtime (an import-linter contract in pyproject.toml keeps it so).
"""
