"""SavedModel export for TF Serving: raw text in, predictions out.

```python
from keras_linformer import export

path = export.export_classifier("artifacts/finetune")  # saved_models/linformer_classifier/1
report = export.verify(path)  # loads it the way TF Serving does
export.query(path, ["a fine film"])  # {"probabilities": ..., ...}
```
"""

from typing import TYPE_CHECKING

from keras_linformer.export.layout import SIGNATURES
from keras_linformer.export.layout import list_versions
from keras_linformer.export.layout import next_version
from keras_linformer.export.layout import read_export_info
from keras_linformer.export.loaders import query
from keras_linformer.export.report import VerificationReport
from keras_linformer.utils.lazy import lazy_names

__all__ = [
    "DEFAULT_MAX_BATCH_SIZE", "SIGNATURES", "VerificationReport", "export_classifier",
    "export_masked_lm", "list_versions", "next_version", "query", "read_export_info",
    "read_warmup_requests", "verify",
]
# The modules of the other names, imported when first used (they import TensorFlow), so
# that `query` runs without it.
_MODULES = ("serving", "warmup", "checks")

if TYPE_CHECKING:  # The same names, for type checkers and the API reference.
    from keras_linformer.export.checks import verify
    from keras_linformer.export.serving import DEFAULT_MAX_BATCH_SIZE
    from keras_linformer.export.serving import export_classifier
    from keras_linformer.export.serving import export_masked_lm
    from keras_linformer.export.warmup import read_warmup_requests


__getattr__, __dir__ = lazy_names(__name__, __all__, _MODULES)
