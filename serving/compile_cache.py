"""Where vLLM keeps what it compiled, and where this project keeps it between starts (`compileCache.keep`).

What vLLM reads from a path (each read in its source):
- TPU: tpu-inference's CompilationManager points JAX's persistent compilation cache at
  `VLLM_XLA_CACHE_PATH` unless `VLLM_DISABLE_COMPILE_CACHE` is set
  (vllm-project/tpu-inference, tpu_inference/runner/compilation_manager.py); vLLM's default for it is
  `~/.cache/vllm/xla_cache` (vllm/envs.py). JAX keys each entry by a hash of the computation, the compile
  options, the jax/jaxlib version and the device kind, so entries of another image or configuration sit
  beside them unused, never in their place.
- GPU: vLLM 0.32 compiles the model ahead of time with torch.compile and saves the result under
  `VLLM_CACHE_ROOT/torch_compile_cache/torch_aot_compile/<hash>/rank_0_0/model` ("saved AOT compiled
  function to ...", this project's real 0.32.0 starts in tests/verify/ops/fixtures/coldstart), the hash
  over the environment, the configuration, vLLM's code and the compiler (vllm/compilation/backends.py), and
  tries it on the next start; one it cannot load is compiled again ("Compiling model again due to a load
  failure", the same starts: on the CPU build the reload itself failed, so the saving is unmeasured here).
  `compilation_config.cache_dir` is not used: set, vLLM puts the artifacts there without the hash, so two
  configurations would share one directory.

Where it is kept: the `compile-cache/` folder of the stack's model bucket, one sub-folder per platform. The
serving identity gets `roles/storage.objectUser` on that managed folder only (the import job's pattern,
components/model_import.py): it can read, add and replace cache objects, never the weights beside them.
A bucket lifecycle rule deletes cache objects `maxAgeDays` after they were written, so entries of old
images and configurations do not pile up (an entry still in use is compiled and written again after that).
"""

from __future__ import annotations

# The model bucket's folder for compile caches (a managed folder: its IAM grant covers this prefix only).
CACHE_FOLDER = "compile-cache/"
# Per platform, the prefix under it.
TPU_CACHE_PREFIX = "compile-cache/xla/"
GPU_CACHE_PREFIX = "compile-cache/torch/"

# The environment variable vLLM reads, and where the container sees the cache.
TPU_CACHE_ENV = "VLLM_XLA_CACHE_PATH"
TPU_CONTAINER_CACHE_DIR = "/var/cache/vllm-xla"
# On the TPU VM: the host directory the startup script restores into and saves from.
TPU_HOST_CACHE_DIR = "/var/lib/gemma-vllm/xla-cache"
GPU_CACHE_ENV = "VLLM_CACHE_ROOT"
GPU_CONTAINER_CACHE_DIR = "/var/cache/vllm"

# The role the serving identity gets on the cache folder: read, list, create and replace objects
# (objectCreator cannot list or replace; objectAdmin could also change the folder's IAM).
CACHE_WRITER_ROLE = "roles/storage.objectUser"
