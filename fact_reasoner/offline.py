"""Nothing is downloaded at run time: the models come from installed packages or folders.

There is no model hub on the machines this project runs on, and a library that tries one waits
on the network before it fails. Every place that loads weights through transformers,
huggingface_hub or sentence-transformers calls :func:`forbid_hub_downloads` first.
"""

from __future__ import annotations

import os


def forbid_hub_downloads() -> None:
    """Tell huggingface_hub and transformers to read their local cache only
    (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``), unless the user set them already."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
