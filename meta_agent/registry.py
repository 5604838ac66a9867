"""meta-agent's registries (domains, proposers) use the same name -> `module:attr` map as the sandboxes."""

from sandboxes.registry import Registry, is_spec, load_spec

__all__ = ["Registry", "is_spec", "load_spec"]
