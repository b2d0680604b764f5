"""`python -m training.finetune` in a checkout: runs `keras_linformer.programs.finetune`.

Installed, the same program is `keras-linformer-finetune` or
`python -m keras_linformer.programs.finetune`, from any directory.
"""

import sys

from keras_linformer.programs.finetune import main

if __name__ == "__main__":
    sys.exit(main())
