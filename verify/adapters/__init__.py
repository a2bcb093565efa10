"""`gemma-verify adapters`: the LoRA adapters a server has loaded, and whether one really answers as itself."""
